"""Random and hostile input never crashes the gateway, never executes an invalid call, and is always audited."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentcore import Gateway
from agentcore.gateway import ApprovalRequired, ToolArgumentError, ToolDenied, UnknownToolError

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
EXPECTED = (ToolArgumentError, ToolDenied, ApprovalRequired, UnknownToolError)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
hostile_text = st.sampled_from(["\x00", "a\x00b", "é" * 10, "ｃｒｍ", "exаmple.com", "\u202e", "x" * 70_000, ""])
arguments = st.dictionaries(
    st.sampled_from(["customer_id", "order_id", "amount", "text", "recipient", "key", "extra"]),
    json_values | hostile_text,
    max_size=4,
)
tools = st.sampled_from(["crm.lookup", "refunds.issue", "orders.cancel", "notes.add", "email.send", "nope", "crm."])
MALFORMED = ({"roles": ["x"]}, 7, None)  # the Python caller's mistakes: TypeError/ValueError, still audited
principals = st.sampled_from(
    ["alice", {"id": "alice", "roles": ["support"]}, {"id": "root", "roles": ["admin"]}, *MALFORMED]
)


def test_random_calls_are_decided_never_crash(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    outcomes: dict[str, int] = {}

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(tool=tools, args=arguments | json_values, principal=principals)
    @example(tool="crm.lookup", args={"customer_id": "c1"}, principal="alice")  # valid, no role: denied
    @example(tool="crm.lookup", args={"customer_id": "c1"}, principal={"id": "alice", "roles": ["support"]})
    @example(tool="crm.lookup", args={"customer_id": "c1"}, principal=7)
    def call(tool: str, args: Any, principal: Any) -> None:
        before = sum(runs.values())
        try:
            gw.call(tool, args, principal=principal)
            outcome = "ok"
        except EXPECTED as error:
            outcome = type(error).__name__
            assert sum(runs.values()) == before  # nothing ran
        except (TypeError, ValueError):
            assert principal in MALFORMED and sum(runs.values()) == before
            outcome = "mistake"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    call()
    records = list(gw.audit.rows())
    decisions = [r for r in records if r["effect"]]
    assert len(decisions) == sum(outcomes.values())  # every call left exactly one record of its decision
    assert gw.audit.verify().ok
    assert outcomes["ToolDenied"] >= 1 and outcomes["ok"] >= 1 and outcomes["ToolArgumentError"] >= 1


HOSTILE_IDS = {
    "x" * (1 << 20): "characters long",  # a megabyte id went into every audit record and state key
    "é" * 4097: "characters long",
    "\ufdfa" * 300: "characters long in canonical form",  # NFKC writes each as 18 characters
    "bob\x00": "non-printable character U+0000",
    "bob\nAPPROVED apr_x by mona": "non-printable character U+000A",  # a forged line in `approvals list`
    "\x1b[2J\x1b[31mroot": "non-printable character U+001B",  # an ANSI escape the CLI printed as it was
    "bob\u2028": "non-printable character U+2028",
    "bob\x85": "non-printable character U+0085",
}


def test_hostile_identity_shapes_are_the_callers_mistake_and_audited_printable(make_gateway: Factory) -> None:
    """Ids of any size and with control characters were accepted and copied into the audit, the state store and
    approval requests, which the CLI prints as they are. Each is now a ValueError at the call site, audited with
    a bounded, printable label of what was sent."""
    gw, runs = make_gateway()
    fields = ("principal", "agent", "session", "tenant")
    for hostile, problem in HOSTILE_IDS.items():
        for field in fields:
            identity = {"principal": "alice", field: hostile}
            with pytest.raises(ValueError, match=re.escape(problem)):
                gw.call("notes.add", {"text": "hi"}, **identity)
        with pytest.raises(ValueError, match=re.escape(problem)):
            gw.call("notes.add", {"text": "hi"}, principal={"id": "alice", "roles": [hostile]})
    records = list(gw.audit.rows())
    assert len(records) == len(HOSTILE_IDS) * (len(fields) + 1) and runs == {}
    assert {(r["effect"], r["outcome"]) for r in records} == {("deny", "invalid")}
    for record in records:
        for field in fields:
            assert record[field] is None or (record[field].isprintable() and len(record[field]) <= 200 * 10)
    assert gw.call("notes.add", {"text": "hi"}, principal="a" * 1024, agent="b" * 1024, tenant="c" * 1024) == "hi"
