"""Per-actor isolation under hostile input: nothing of actor B ever reaches a query for actor A."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore.memory import InvalidMemoryInputError, MemoryNotFoundError, MemoryStore, resolve_namespace

pytestmark = pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)

HOSTILE_IDS = ["../x", "%", "_", "' OR 1=1 --", '"; DROP TABLE memory_events; --', "a/b", "*", "\\", "ünï 🚀"]


def _fill(store: MemoryStore, actor: str, secret: str) -> None:
    store.add_event(actor, "s1", "user", f"my password hint is {secret}")
    namespace = resolve_namespace("/users/{actor_id}/facts", actor_id=actor)
    store.add_record(actor, namespace, f"the password hint is {secret}", metadata={"owner": actor})


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_hostile_ids_are_data_and_never_cross_actors(store: MemoryStore, hostile: str) -> None:
    _fill(store, "victim", "zebracorn")
    _fill(store, hostile, "quokka")
    assert [e.text for e in store.list_events(hostile, "s1")] == ["my password hint is quokka"]
    for actor, secret, other in ((hostile, "quokka", "zebracorn"), ("victim", "zebracorn", "quokka")):
        for mode in ("hybrid", "vector", "fulltext"):
            events = store.search_events(actor, f"password hint {other}", mode=mode)
            records = store.retrieve(actor, f"password hint {other}", mode=mode, namespace_prefix="/")
            assert events and all(secret in hit.event.text and hit.event.actor_id == actor for hit in events)
            assert records and all(secret in hit.record.text and hit.record.actor_id == actor for hit in records)
        assert all(record.actor_id == actor for record in store.list_records(actor))
    victim_record = store.list_records("victim")[0]
    with pytest.raises(MemoryNotFoundError):
        store.get_record(hostile, victim_record.id)
    with pytest.raises(MemoryNotFoundError):
        store.delete_record(hostile, victim_record.id)
    with pytest.raises(MemoryNotFoundError):
        store.update_record(hostile, victim_record.id, metadata={"owner": hostile})
    assert store.stats().events == 2  # nothing was dropped or injected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.add_event("a\x00b", "s1", "user", "hi"), "control character"),
        (lambda s: s.add_event("", "s1", "user", "hi"), "1 to 255"),
        (lambda s: s.add_event("x" * 256, "s1", "user", "hi"), "1 to 255"),
        (lambda s: s.add_event("alice", "s1", "user", "nul \x00 byte"), "NUL"),
        (lambda s: s.add_event("al\ud800ice", "s1", "user", "hi"), "lone surrogate '\\\\ud800' at position 2"),
        (lambda s: s.add_event("alice", "s1", "user", "hi \udc80"), "lone surrogate"),
        (lambda s: s.retrieve("alice", "hi \udc80"), "lone surrogate"),
        (lambda s: s.add_record("alice", "/users/\udc80", "hi"), "lone surrogate"),
        (lambda s: s.add_event("alice", "s1", "user", "x" * 10_000_000), "limit of 100,000"),
        (lambda s: s.add_event("alice", "s1", "user", "hi", metadata={"k": "v\x00"}), "NUL"),
        (lambda s: s.add_record("alice", "../x", "hi"), "must start with '/'"),
        (lambda s: s.list_records("alice", limit=-1), "limit must be a positive integer"),
        (lambda s: s.list_records("alice", limit=0), "limit must be a positive integer"),
        (lambda s: s.list_events("alice", "s1", limit=True), "limit must be a positive integer"),
        (lambda s: s.add_record("alice", "/users/../bob", "hi"), "invalid segment '..'"),
        (lambda s: s.add_record("alice", "/users//bob", "hi"), "invalid segment"),
        (lambda s: s.retrieve("alice", "hi", namespace="/a\x00b"), "invalid segment"),
        (lambda s: s.retrieve("alice", "x" * 10_000_000), "limit of 100,000"),
        (lambda s: s.retrieve("alice", "hi", top_k=101), "top_k"),
        (lambda s: s.retrieve("alice", "hi", mode="sql"), "mode"),
    ],
)
def test_unstorable_input_is_rejected_before_the_database(
    store: MemoryStore, call: Callable[[MemoryStore], object], message: str
) -> None:
    with pytest.raises(InvalidMemoryInputError, match=message):
        call(store)
    assert store.stats().events == 0 and store.stats().records == 0


def test_odd_text_is_stored_verbatim(store: MemoryStore) -> None:
    text = '\' OR 1=1 -- %_ "quoted" NEAR(a b) AND OR * ^ : ünï 🚀'
    event = store.add_event("alice", "s1", "user", text)
    assert store.get_event("alice", event.id).text == text
    assert store.search_events("alice", text, mode="fulltext")[0].event.id == event.id


def test_forget_removes_everything_of_the_actor_only(store: MemoryStore) -> None:
    _fill(store, "alice", "zebracorn")
    _fill(store, "bob", "quokka")
    store.extract("alice", "s1")
    report = store.forget("alice")
    assert report.events == 1 and report.records >= 1 and report.sessions == 1
    assert store.list_events("alice", "s1") == [] and store.list_records("alice") == []
    assert store.search_events("alice", "zebracorn") == [] and store.retrieve("alice", "zebracorn") == []
    assert store.list_sessions("alice") == []
    assert [e.text for e in store.list_events("bob", "s1")] == ["my password hint is quokka"]
    assert store.stats().actors == 1


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(min_size=1, max_size=30), min_size=2, max_size=2, unique=True))
def test_any_two_actor_ids_stay_apart(store: MemoryStore, actors: list[str]) -> None:
    """Generated ids, including control characters and SQL/LIKE/path metacharacters: stored apart or rejected."""
    first, second = actors
    try:
        events = [store.add_event(actor, "s", "user", f"secret number {actor!r}") for actor in actors]
    except InvalidMemoryInputError as error:
        assert any(ord(c) < 32 or ord(c) == 127 for c in first + second), error
        return
    for actor, own in zip(actors, events, strict=True):
        for mode in ("hybrid", "fulltext"):
            hits = store.search_events(actor, "secret number", mode=mode)
            assert [hit.event.id for hit in hits] == [own.id]
    store.forget(first)
    assert store.list_events(second, "s") == [events[1]]
    store.forget(second)
