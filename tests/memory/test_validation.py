"""Input checks and namespace templates, without a database."""

from __future__ import annotations

import pytest

from agentcore.memory import FactExtractor, InvalidMemoryInputError, MemoryStrategy, resolve_namespace
from agentcore.memory.filters import compile_filters
from agentcore.memory.validation import check_namespace, check_positive


def test_namespace_templates_encode_ids_so_they_cannot_climb() -> None:
    assert resolve_namespace("/users/{actor_id}/facts", actor_id="../x") == "/users/..%2Fx/facts"
    assert resolve_namespace("/users/{actor_id}/s/{session_id}", actor_id="a/b", session_id="%") == "/users/a%2Fb/s/%25"
    with pytest.raises(InvalidMemoryInputError, match="allowed fields"):
        resolve_namespace("/users/{user}/facts", actor_id="a")
    with pytest.raises(InvalidMemoryInputError, match="session_id"):
        resolve_namespace("/s/{session_id}", actor_id="a")


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("/users/{actorId}/facts", r"unknown fields \['actorId'\].*\{actorId\} -> \{actor_id\}"),
        ("/users/{actor}/facts", r"unknown fields \['actor'\]; allowed fields"),
        ("/users/{actor_id/facts", "malformed"),
        ("users/{actor_id}", "must start with '/'"),
    ],
)
def test_a_strategy_with_a_bad_namespace_template_is_refused_when_built(template: str, message: str) -> None:
    with pytest.raises(InvalidMemoryInputError, match=message):
        MemoryStrategy("facts", template, FactExtractor())


@pytest.mark.parametrize("namespace", ["/users/{actor_id}/facts", "/users/{}/facts", "/s/{sessionId}"])
def test_an_unresolved_template_is_not_a_namespace(namespace: str) -> None:
    with pytest.raises(InvalidMemoryInputError, match=r"unresolved template field.*resolve_namespace"):
        check_namespace(namespace)


@pytest.mark.parametrize("namespace", ["/", "/users/alice", "/users/alice/", "/a b/%/_/' OR 1=1 --"])
def test_valid_namespaces(namespace: str) -> None:
    assert check_namespace(namespace) == namespace


def test_filters_compare_only_like_with_like() -> None:
    newer = compile_filters({"year": {"$gt": 2020}, "tag": {"$in": ["a", "b"]}})
    assert newer({"year": 2021, "tag": "a"})
    assert not newer({"year": "2021", "tag": "a"})  # a string is not greater than a number
    assert not newer({"year": True, "tag": "a"})
    assert not newer({"tag": "a"})
    assert compile_filters({"tag": {"$ne": "x"}})({})
    assert compile_filters({"tags": {"$contains": "red"}})({"tags": ["red", "blue"]})
    assert compile_filters(None)({})
    with pytest.raises(InvalidMemoryInputError, match=r"\$in takes a list"):
        compile_filters({"tag": {"$in": "a"}})
    with pytest.raises(InvalidMemoryInputError, match=r"\$exists takes"):
        compile_filters({"tag": {"$exists": 1}})


@pytest.mark.parametrize("value", [0, -3, 1.5, True, "384", None])
def test_a_count_setting_is_a_positive_integer_and_not_a_bool(value: object) -> None:
    with pytest.raises(InvalidMemoryInputError, match="dimension must be a positive integer"):
        check_positive("dimension", value)
    assert check_positive("dimension", 384) == 384
