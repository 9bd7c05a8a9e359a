"""One canonical form end to end: the tool receives the text the policy decided on and the audit recorded, for
arguments and identities, under ``unicode="canonicalize"`` (default) and ``unicode="reject"``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import Gateway
from agentcore.gateway import ToolArgumentError, ToolDenied, UnknownToolError
from agentcore.policies.model import Request

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SPOOFED = "https://api.example.com\uff0f@evil.com/v1"  # U+FF0F FULLWIDTH SOLIDUS: WHATWG parsers go to evil.com
POLICY = 'allow http.get when url host is "api.example.com".\nallow t.echo.\nallow t.typed.\n'


def _records(gw: Gateway) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gw.audit.export_jsonl()]


def _decided(gw: Gateway) -> dict[str, Any]:
    """The latest allow decision, committed before its tool ran: it holds the arguments decided on."""
    return [r for r in _records(gw) if r["outcome"] == "started"][-1]


@pytest.fixture
def echo_gateway(tmp_path: Path) -> Iterator[Callable[..., tuple[Gateway, list[Any], list[Request]]]]:
    """A gateway whose tools keep what they received, and whose engine keeps every Request it decided."""
    made: list[Gateway] = []

    def make(**options: Any) -> tuple[Gateway, list[Any], list[Request]]:
        (tmp_path / "p").mkdir(exist_ok=True)
        (tmp_path / "p" / "web.policy").write_text(POLICY, encoding="utf-8")
        gw = Gateway(tmp_path / "p", database=str(tmp_path / f"gw{len(made)}.db"), **options)
        made.append(gw)
        received: list[Any] = []
        seen: list[Request] = []

        @gw.tool(name="http.get")
        def get(url: str) -> str:
            received.append(url)
            return "ok"

        @gw.tool(name="t.echo", schema={"type": "object"})  # a JSON Schema tool, like every MCP upstream
        def echo(**kwargs: Any) -> str:
            received.append(kwargs)
            return "ok"

        @gw.tool(name="t.typed")  # a pydantic-validated tool
        def typed(text: str, items: list[str], extra: dict[str, Any] | None = None) -> str:
            received.append({"text": text, "items": items, "extra": extra})
            return "ok"

        engine = gw.policy.current()
        decide = engine.decide

        def spy(request: Request, context: Any = None) -> Any:
            seen.append(request)
            return decide(request, context)

        engine.decide = spy  # type: ignore[method-assign]
        return gw, received, seen

    yield make
    for gw in made:
        gw.close()


def test_the_tool_receives_the_url_the_policy_allowed(echo_gateway: Callable[..., Any]) -> None:
    gw, received, seen = echo_gateway()
    assert gw.call("http.get", {"url": SPOOFED}, principal="alice") == "ok"
    (url,) = received
    assert url == "https://api.example.com/@evil.com/v1" == seen[-1].args["url"]
    assert urlsplit(url).hostname == "api.example.com"  # the host the policy decided on is the host fetched
    assert _decided(gw)["detail"]["args"] == {"url": url}
    gw.call("http.get", {"url": "https://api.exa\u200bmple.com/v1\u00ad"}, principal="alice")  # invisible ones
    assert received[-1] == "https://api.example.com/v1"


def test_reject_refuses_text_that_is_not_canonical_and_audits_it(echo_gateway: Callable[..., Any]) -> None:
    gw, received, seen = echo_gateway(unicode="reject")
    with pytest.raises(ToolArgumentError, match=r"\$\.url: contains U\+FF0F at index 23"):
        gw.call("http.get", {"url": SPOOFED}, principal="alice")
    with pytest.raises(ToolArgumentError, match=r"invisible character U\+200B"):
        gw.call("t.echo", {"note\u200b": "x"}, principal="alice")
    assert received == [] and seen == []
    assert [(r["effect"], r["outcome"]) for r in _records(gw)] == [("deny", "invalid")] * 2
    assert gw.call("http.get", {"url": "https://api.example.com/é"}, principal="alice") == "ok"  # canonical passes


def test_keys_that_become_one_key_are_refused(echo_gateway: Callable[..., Any]) -> None:
    gw, received, _ = echo_gateway()
    with pytest.raises(ToolArgumentError, match="same key in canonical form"):
        gw.call("t.echo", {"to": "a", "t\u200bo": "b"}, principal="alice")
    assert received == []


def test_the_unicode_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="unicode must be 'canonicalize' or 'reject'"):
        Gateway(None, database=":memory:", unicode="nfc")  # type: ignore[arg-type]


text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["ｍａｌｌｏｒｙ", "a\u200bb", "e\u0301", "\ufb01le", "\u202eevil", "\uffa0x", "ﷺ", "Å"]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    args=st.dictionaries(text, json_values, max_size=4)
    | st.fixed_dictionaries({"text": text, "items": st.lists(text, max_size=3), "extra": st.none() | json_values})
)
def test_what_the_tool_received_is_what_the_policy_saw_and_the_audit_recorded(
    echo_gateway: Callable[..., Any], args: dict[str, Any]
) -> None:
    gw, received, seen = echo_gateway()
    tool = "t.typed" if set(args) == {"text", "items", "extra"} else "t.echo"
    try:
        gw.call(tool, args, principal="alice")
    except ToolArgumentError:
        assert received == []  # refused (colliding keys, or a schema mismatch): nothing ran
        return
    (got,) = received
    assert got == seen[-1].args == _decided(gw)["detail"]["args"]


# ---- identities -------------------------------------------------------------------------------------------------
VARIANTS = ["mallory", "ｍａｌｌｏｒｙ", "mallory\u200b", "mal\u00adlory", "\ufeffmallory"]


def test_a_deny_for_a_user_holds_for_every_spelling_of_the_user(make_gateway: Factory, tmp_path: Path) -> None:
    policy = 'allow notes.add.\ndeny notes.add for user "mallory".\nallow files.delete for users with role "admin".\n'
    gw, runs = make_gateway(policy=policy)
    for variant in VARIANTS:
        with pytest.raises(ToolDenied):
            gw.call("notes.add", {"text": "hi"}, principal=variant)
        with pytest.raises(ToolDenied):
            gw.call("notes.add", {"text": "hi"}, principal={"id": variant, "roles": ["support"]})
    assert runs == {}
    assert {r["principal"] for r in _records(gw)} == {"mallory"}
    assert gw.call("files.delete", {"path": "/tmp/x"}, principal={"id": "root", "roles": ["ａｄｍｉｎ\u200d"]})


def test_spellings_of_one_user_share_one_rate_limit_budget(make_gateway: Factory) -> None:
    gw, runs = make_gateway()  # limit notes.add to 3 calls per minute per user
    for variant in VARIANTS[:3]:
        assert gw.call("notes.add", {"text": "hi"}, principal=variant) == "hi"
    for variant in VARIANTS:
        with pytest.raises(ToolDenied, match="limit"):
            gw.call("notes.add", {"text": "hi"}, principal=variant)
    assert runs == {"notes.add": 3}


def test_session_agent_and_tenant_are_canonical_too(make_gateway: Factory) -> None:
    gw, _ = make_gateway(policy="allow notes.add.\nlimit notes.add to 1 calls per minute per session.\n")
    gw.call("notes.add", {"text": "hi"}, principal="a", agent="ｂｏｔ", session="s\u200b1", tenant="ａｃｍｅ")
    record = _records(gw)[-1]
    assert (record["agent"], record["session"], record["tenant"]) == ("bot", "s1", "acme")
    with pytest.raises(ToolDenied, match="limit"):
        gw.call(
            "notes.add", {"text": "hi"}, principal="b", session="ｓ1", tenant="acme\u200d"
        )  # one session of one tenant


def test_reject_refuses_an_identity_that_is_not_canonical(make_gateway: Factory) -> None:
    gw, runs = make_gateway(unicode="reject")
    with pytest.raises(ToolDenied, match=r"identity is not in canonical form: principal\.id: 'mallory\\u200b'"):
        gw.call("notes.add", {"text": "hi"}, principal="mallory\u200b")
    with pytest.raises(ToolDenied, match=r"principal\.roles"):
        gw.call("notes.add", {"text": "hi"}, principal={"id": "m", "roles": ["ｓｕｐｐｏｒｔ"]})
    assert runs == {}
    assert [(r["effect"], r["outcome"]) for r in _records(gw)] == [("deny", "invalid")] * 2
    assert gw.call("notes.add", {"text": "hi"}, principal="mallory") == "hi"


INVISIBLE_ONLY = ["", "\u200b", "\u200b\u200d\ufeff", "\u202e", "\u3164"]  # nothing left in canonical form


@pytest.mark.parametrize("mode", ["canonicalize", "reject"])
def test_an_identity_empty_in_canonical_form_is_the_callers_mistake_and_audited(
    make_gateway: Factory, mode: str
) -> None:
    """Every caller whose id held only invisible characters was one user ``""`` (one budget, one history); an
    agent, role or session likewise. Now each is a ValueError at the call site, audited as an invalid call; a
    tenant of ``""`` stays a tenant (None is no tenant), as the state store and approvals keep it."""
    gw, runs = make_gateway(unicode=mode)
    attempts: list[dict[str, Any]] = []
    for blank in INVISIBLE_ONLY if mode == "canonicalize" else [""]:
        attempts += [{"principal": blank}, {"principal": {"id": "alice", "roles": ["support", blank]}},
                     {"principal": "alice", "agent": blank}, {"principal": "alice", "session": blank}]  # fmt: skip
    for attempt in attempts:
        with pytest.raises(ValueError, match="is empty in canonical form") as error:
            gw.call("notes.add", {"text": "hi"}, **attempt)
        assert not isinstance(error.value, ToolDenied)
    records = _records(gw)
    assert [(r["effect"], r["outcome"]) for r in records] == [("deny", "invalid")] * len(attempts)
    assert all("empty in canonical form" in r["detail"]["error"] for r in records) and runs == {}
    assert gw.call("notes.add", {"text": "hi"}, principal="alice", tenant="") == "hi"
    assert _records(gw)[-1]["tenant"] == ""


def test_a_lone_surrogate_is_refused_in_arguments_and_identities(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    with pytest.raises(ToolArgumentError, match="lone surrogate"):
        gw.call("notes.add", {"text": "a\ud800"}, principal="alice")
    with pytest.raises(ToolDenied, match="lone surrogate"):
        gw.call("notes.add", {"text": "hi"}, principal="alice\udc80")
    assert runs == {} and gw.audit.verify().ok


# ---- input bounds and clean errors ------------------------------------------------------------------------------
def test_the_size_limit_counts_encoded_bytes(make_gateway: Factory) -> None:
    gw, runs = make_gateway()  # 256 KiB
    with pytest.raises(ToolArgumentError, match=r"390\d{3} bytes of JSON, more than the limit of 262144"):
        gw.call("notes.add", {"text": "\x01" * 65_000}, principal="alice")
    assert runs == {}


def _deep(kind: type, depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):  # built without recursion, like a JSON parser would
        value = [value] if kind is list else {"k": value}
    return value


@pytest.mark.parametrize("kind", [list, dict])
def test_deep_nesting_is_refused_before_any_recursion_and_audited(make_gateway: Factory, kind: type) -> None:
    gw, runs = make_gateway()
    with pytest.raises(ToolArgumentError, match="nested deeper than 32 levels"):
        gw.call("notes.add", {"text": _deep(kind, 5_000)}, principal="alice")
    record = _records(gw)[-1]
    assert (record["effect"], record["outcome"]) == ("deny", "invalid") and len(record["detail"]["args"]) < 3000
    assert runs == {}


def test_a_hidden_tool_is_never_suggested(make_gateway: Factory) -> None:
    gw, _ = make_gateway()  # files.delete: admins only
    with pytest.raises(UnknownToolError) as hidden:
        gw.call("files.delet", {"path": "/"}, principal="bob")
    assert "files.delete" not in str(hidden.value) and "list_tools()" not in str(hidden.value)
    with pytest.raises(UnknownToolError, match=r"did you mean 'files\.delete'"):
        gw.call("files.delet", {"path": "/"}, principal={"id": "root", "roles": ["admin"]})
    with pytest.raises(UnknownToolError) as unidentified:
        gw.call("files.delet", {"path": "/"}, principal=7)  # type: ignore[arg-type]
    assert "did you mean" not in str(unidentified.value)
    assert [r["outcome"] for r in _records(gw)] == ["invalid"] * 3


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupted_resolver_leaves_an_audit_record(make_gateway: Factory, interrupt: type) -> None:
    gw, runs = make_gateway()

    @gw.resolver("order")
    def stopping(order_id: Any) -> Any:
        raise interrupt()

    with pytest.raises(interrupt):
        gw.call("orders.cancel", {"order_id": "o1"}, principal={"id": "alice", "roles": ["support"]})
    record = _records(gw)[-1]
    assert (record["effect"], record["outcome"]) == ("deny", "error")
    assert record["detail"]["error"] == f"interrupted by {interrupt.__name__}"
    assert runs == {}


def test_an_async_tool_called_with_call_inside_an_event_loop_is_a_developer_error(make_gateway: Factory) -> None:
    gw, runs = make_gateway()

    async def inside_a_loop() -> None:
        with pytest.raises(TypeError, match=r"use `await gw\.acall\(\.\.\.\)`"):
            gw.call("notes.add", {"text": "hi"}, principal="alice")

    asyncio.run(inside_a_loop())
    assert runs == {} and _records(gw)[-1]["outcome"] == "invalid"


def test_why_a_rule_failed_closed_is_for_developers_not_the_model(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    gw.context.resolvers.clear()  # deny orders.cancel when order(order_id).status ... now fails closed
    with pytest.raises(ToolDenied) as error:
        gw.call("orders.cancel", {"order_id": "o1"}, principal={"id": "alice", "roles": ["support"]})
    assert "@gateway.resolver" in str(error.value) and "@gateway.resolver" not in error.value.agent_message
    assert "failed closed: it could not be evaluated" in error.value.agent_message
    assert runs == {}
