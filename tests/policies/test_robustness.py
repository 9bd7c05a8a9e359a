"""Hypothesis: random and mutated policy texts raise only policy errors; hostile requests never crash decide."""

from __future__ import annotations

import math
from fnmatch import fnmatchcase
from pathlib import Path

import cedarpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import Effect, PolicyCheckError, PolicyEngine, PolicySyntaxError, Request
from agentcore.policies import AgentInfo, InMemoryContext, Principal, RequestContext, parse
from agentcore.policies.cedar import CedarExportError, export
from agentcore.policies.checker import check
from agentcore.policies.formatter import format_file
from agentcore.policies.parser import _inline

FEATURES = (Path(__file__).parent / "data" / "features.policy").read_text()
ENGINE = PolicyEngine.from_text(FEATURES, "features.policy")
CONTEXT = InMemoryContext(resolvers={"order": lambda key: {"status": key}}, detectors={"sensitive information": len})
WORDS = [
    "allow",
    "deny",
    "when",
    "unless",
    "and",
    "or",
    "not",
    "is",
    "more",
    "than",
    "(",
    ")",
    ".",
    ",",
    '"x"',
    "1",
    "-",
    "09:00",
    "per",
    "user",
    "hour",
    "limit",
    "to",
    "calls",
    "any",
    "tool",
    "in",
    "the",
    "last",
    "of",
    "a.b",
]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def compiles_or_policy_error(text: str) -> None:
    """Loading raises only policy errors; whatever loads can also be checked, formatted and exported. Both fast
    paths (pure Lark, lark_cython where installed) accept the same texts and build the same AST."""
    assert _inline(accelerated=True).parse(text, "<policy>", "start") == _inline(False).parse(text, "<policy>", "start")
    try:
        engine = PolicyEngine.from_text(text)
    except (PolicySyntaxError, PolicyCheckError) as error:
        assert error.problems and str(error)
        return
    check(engine.files)
    exported = export(engine.files)
    try:
        cedarpy.PolicySet.from_str(exported.text)  # what exports is valid Cedar
    except CedarExportError as error:
        assert exported.refused and len(error.problems) == len(exported.refused)
    format_file(engine.files[0])


@SETTINGS
@given(st.text(max_size=200))
def test_random_text(text: str) -> None:
    compiles_or_policy_error(text)


@SETTINGS
@given(st.lists(st.sampled_from(WORDS), max_size=30))
def test_random_word_salad(words: list[str]) -> None:
    compiles_or_policy_error(" ".join(words))


@SETTINGS
@given(st.data())
def test_mutated_valid_policy(data: st.DataObject) -> None:
    text = FEATURES
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        edit = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = data.draw(st.sampled_from([*WORDS, "é", "\n", '"', "\\", "*", "9" * 5000, "0.5", "-", "not", "or"]))
        if edit == "insert":
            text = text[:at] + piece + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 20)) :]
        else:
            text = text[:at] + piece + text[at + len(piece) :]
    compiles_or_policy_error(text)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(["ａｄｍｉｎ", "ﬂagged", "\u200bpending", "e\u0301", "http://[::1", "@example.com"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)
ACTIONS = [
    "refunds.issue",
    "cancel_order",
    "crm.lookup",
    "email.send",
    "http.get",
    "payments.charge",
    "files.delete",
    "slack.post_message",
    "x",
    "y",
    "",
    "ｒｅｆｕｎｄｓ.issue",
]


@SETTINGS
@given(
    action=st.sampled_from(ACTIONS) | st.text(max_size=30),
    args=st.dictionaries(
        st.sampled_from(["amount", "order_id", "recipient", "url", "customer", "a", "d"]), json_values
    ),
    roles=st.frozensets(st.sampled_from(["support", "crm-reader", "manager", " "]), max_size=3),
)
def test_hostile_requests_never_crash(action: str, args: dict[str, object], roles: frozenset[str]) -> None:
    request = Request(
        principal=Principal(id="u", roles=roles),
        agent=AgentInfo(id="night-bot"),
        action=action,
        args=args,
        context=RequestContext(session_id="s"),
    )
    decision = ENGINE.decide(request, CONTEXT)
    assert decision.effect in set(Effect) and decision.reasons
    if any(isinstance(v, float) and not math.isfinite(v) for v in args.values()) and action == "refunds.issue":
        assert decision.effect is not Effect.ALLOW


@settings(max_examples=50, deadline=None)
@given(garbage=st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers())))
def test_malformed_request_objects_are_denied(garbage: object) -> None:
    broken = Request.model_construct(principal=garbage, action="refunds.issue", args=garbage, context=garbage)
    decision = ENGINE.decide(broken, CONTEXT)
    assert decision.effect is Effect.DENY and decision.reasons


@SETTINGS
@given(st.sampled_from(ACTIONS) | st.text(alphabet="abcrm.*_-", max_size=12))
def test_action_index_equals_naive_scan(action: str) -> None:
    bundle = ENGINE.bundle
    plan = bundle.plan(action)
    indexed = {
        id(r) for group in (plan.denies, plan.approvals, plan.allows, plan.obligations, plan.monitors) for r in group
    }
    naive = {id(r) for r in bundle.rules if any(fnmatchcase(action, p) for p in r.patterns)}
    assert indexed == naive


# ---- policy language v2 ---------------------------------------------------------------------------------------
V2_POLICY = (Path(__file__).parent / "data" / "v2.policy").read_text()
V2_ENGINE = PolicyEngine.from_text(V2_POLICY, "v2.policy")
V2_CONTEXT = InMemoryContext(
    resolvers={"flight": lambda number, date: {"status": number}, "customer": lambda key: {"orders": key}}
)
V2_WORDS = [
    *WORDS,
    "any",
    "every",
    "no",
    "has",
    "where",
    "count",
    "sum",
    "for",
    "min",
    "max",
    "abs",
    "plus",
    "minus",
    "times",
    "divided",
    "by",
    "+",
    "×",
    "÷",
    "now",
    "today",
    "weekday",
    "time",
    "day",
    "before",
    "after",
    "within",
    "14 days",
    "18:00",
    "if",
    "present",
    "missing",
    "define",
    "as",
    "resolver",
    "returns",
    "list",
    "{",
    "}",
    ":",
    "f(a, b)",
    "item.x",
    "less",
    "least",
    "at most",
    "<",
    ">=",
]


@SETTINGS
@given(st.lists(st.sampled_from(V2_WORDS), max_size=30))
def test_random_v2_word_salad(words: list[str]) -> None:
    compiles_or_policy_error(" ".join(words))


@SETTINGS
@given(st.data())
def test_mutated_v2_policy(data: st.DataObject) -> None:
    text = V2_POLICY
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        piece = data.draw(st.sampled_from([*V2_WORDS, "\n", '"', "9" * 80, "0.5", "-", "(", ")", "."]))
        if data.draw(st.booleans()):
            text = text[:at] + " " + piece + " " + text[at:]
        else:
            text = text[:at] + text[at + data.draw(st.integers(1, 20)) :]
    compiles_or_policy_error(text)


SCHEMA = "resolver flight(number: string, date: date) returns {status: string, legs: list of {at: datetime}}.\n"


@SETTINGS
@given(st.data())
def test_mutated_schema_file(data: st.DataObject) -> None:
    """A schema file parses or raises a located syntax error; whatever parses checks with the v2 bundle."""
    text = SCHEMA * 2
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        piece = data.draw(st.sampled_from([*V2_WORDS, "\n", '"', "string", "number", "record", "}", "{", ","]))
        text = text[:at] + " " + piece + " " + text[at:] if data.draw(st.booleans()) else text[:at] + text[at + 9 :]
    assert _inline(accelerated=True).parse(text, "r.schema", "schema") == _inline(False).parse(
        text, "r.schema", "schema"
    )
    try:
        schema = parse(text, "r.schema")
    except PolicySyntaxError as error:
        assert all(p.file == "r.schema" and p.line >= 1 for p in error.problems)
        return
    assert not schema.rules and not schema.definitions
    check([schema, *V2_ENGINE.files])


@SETTINGS
@given(
    action=st.sampled_from(["expenses.submit", "trips.book", "x"]),
    args=st.dictionaries(
        st.sampled_from(["line_items", "payments", "amount", "total", "start_date", "end_date", "legs", "n", "tags"]),
        json_values | st.sampled_from(["2026-01-05", "2026-01-05T10:00:00Z", "2026-13-40", "1e999"]),
    ),
)
def test_hostile_requests_never_crash_v2(action: str, args: dict[str, object]) -> None:
    request = Request(principal=Principal(id="u"), action=action, args=args, context=RequestContext(session_id="s"))
    decision = V2_ENGINE.decide(request, V2_CONTEXT)
    assert decision.effect in set(Effect) and decision.reasons
