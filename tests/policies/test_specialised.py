"""The closures specialised when a rule compiles (windows around ``now``, comparisons with a duration literal,
whole-number arithmetic and differences of dates, two-part ``or``) decide exactly as the general closures, errors
and notes included."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import PolicyEngine, Request
from agentcore.policies import AgentInfo, Principal, RequestContext, compiler, conditions, parse
from agentcore.policies.quantities import LIMIT, Unevaluable, arithmetic, moment
from agentcore.policies.values import Env, compile_value, describe

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
RULES = """
deny t when start is within 48 hours after now.
deny t when start is within 2 hours before now or start is within 90 minutes of now.
deny t when end minus start is more than 30 days.
deny t when end minus start is at most 1 day or start is after end.
deny t when start is within 1 second of now.
"""
MOMENTS = st.one_of(
    st.datetimes(datetime(2025, 12, 1), datetime(2026, 2, 1)).map(lambda d: d.isoformat()),  # naive: UTC
    st.datetimes(datetime(2025, 12, 1), datetime(2026, 2, 1), timezones=st.just(UTC)).map(lambda d: d.isoformat()),
    st.dates().map(lambda d: d.isoformat()),
    st.sampled_from(["2026-01-05", "2026-01-07T12:00:00Z", "2026-01-05T12:00:00+00:00", "2026-13-01", "2026-01-5X"]),
    st.sampled_from(["soon", "", "2026", "２０２６-01-05", "2026-01-05 12:00", 5, 2.5, True, None, [1], {"a": 1}]),
)


def general_engine() -> PolicyEngine:
    """The bundle compiled without the specialised closures."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conditions, "_within_now", lambda op, left, right, what: None)
        patch.setattr(conditions, "_ordered_duration", _general_ordered)
        patch.setattr(conditions, "_either", lambda first, second: conditions._any([first, second, _false]))
        return PolicyEngine.from_text("default allow.\n" + RULES, "times.policy")


def _general_ordered(op: str, left: Any, bound: Any, what: str) -> Any:
    return conditions._binary(op, left, lambda env: bound, what)


def _false(env: Env) -> bool:
    return False


FAST, GENERAL = PolicyEngine.from_text("default allow.\n" + RULES, "times.policy"), general_engine()


def outcome(engine: PolicyEngine, args: dict[str, Any]) -> list[tuple[str, str | None]]:
    request = Request(principal=Principal(id="u"), action="t", args=args, context=RequestContext(time=NOW))
    decision = engine.decide(request)
    return [(decision.effect.value, None), *((r.rule_id, r.note) for r in decision.reasons)]


@settings(max_examples=400, deadline=None)
@given(start=MOMENTS, end=MOMENTS)
def test_time_windows_and_durations_decide_as_the_general_closures(start: Any, end: Any) -> None:
    assert outcome(FAST, {"start": start, "end": end}) == outcome(GENERAL, {"start": start, "end": end})


def test_the_specialised_time_closures_are_the_ones_compiled() -> None:
    def compiled(condition: str) -> str:
        return str(conditions.Compiler({}).cond(parse(f"deny t when {condition}.").rules[0].clauses[0].cond).__name__)

    assert compiled("start is within 1 hour of now") == "within_now"
    assert compiled("a is more than 2 days") == "ordered_duration"
    assert compiled("end minus start is more than 30 days") == "texts_apart"


def _moment_by_pattern(value: str) -> Any:
    """``quantities.moment`` of a text as it read texts before the shape test: the date pattern decides."""
    try:
        if len(value) == 10 and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return date.fromisoformat(value)
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return "unevaluable"
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


DATE_LIKE = st.one_of(
    st.text(alphabet="0123456789-W:T+Z \u0662\uff12", min_size=10, max_size=10),
    st.dates().map(lambda d: d.isoformat()),
    st.tuples(st.dates(), st.integers(0, 9), st.sampled_from("0-W:+T \u0662")).map(
        lambda t: t[0].isoformat()[: t[1]] + t[2] + t[0].isoformat()[t[1] + 1 :]
    ),
    st.sampled_from(["2026-W06-2", "2026-02-30", "2026-13-01", "2026-1-1-1", "20260210T5", "2026-02-1Z"]),
)


@settings(max_examples=500, deadline=None)
@given(text=DATE_LIKE)
def test_a_text_is_a_date_exactly_when_the_date_pattern_matches_it(text: str) -> None:
    """``moment`` tries ``date.fromisoformat`` on a ten-character text with a date's dashes instead of matching
    the pattern first: the same dates, timestamps and refusals."""
    try:
        got: Any = moment(text, "x")
    except Unevaluable:
        got = "unevaluable"
    expected = _moment_by_pattern(text)
    assert (got, type(got)) == (expected, type(expected))


def test_windows_around_now_hold_at_their_bounds() -> None:
    def denied(rule: str, start: str) -> bool:
        return outcome(PolicyEngine.from_text("default allow.\n" + rule), {"start": start})[0][0] == "deny"

    assert denied("deny t when start is within 48 hours after now.", "2026-01-07T12:00:00Z")
    assert not denied("deny t when start is within 48 hours after now.", "2026-01-07T12:00:01Z")
    assert not denied("deny t when start is within 48 hours after now.", "2026-01-05T11:59:59Z")
    assert not denied("deny t when start is within 11 hours before now.", "2026-01-05")  # a date: midnight UTC
    assert denied("deny t when start is within 12 hours before now.", "2026-01-05")
    assert denied("deny t when start is within 12 hours of now.", "2026-01-05")


def test_a_two_part_or_is_three_valued() -> None:
    rule = "deny t when a is more than 5 or b is more than 5."
    engine = PolicyEngine.from_text("default allow.\n" + rule)
    assert outcome(engine, {"a": "x", "b": 9})[0][0] == "deny"  # true despite the unevaluable part
    assert outcome(engine, {"a": 9, "b": "x"})[0][0] == "deny"
    failed = outcome(engine, {"a": "x", "b": 1})
    assert failed[0][0] == "deny" and "failed closed" in str(failed[1][1])  # no true part: fails closed
    assert outcome(engine, {"a": 1, "b": 2})[0][0] == "allow"


NUMBERS = st.one_of(
    st.integers(-50, 50),
    st.sampled_from([LIMIT - 1, -(LIMIT - 1), LIMIT, 10**30, 0.1, 2.5, True, None, "ten", [1]]),
    st.sampled_from(["2026-01-05", "2026-01-07T12:00:00Z", "2026-01-07T12:00:00", "2026-13-01", "2026x", "1 day"]),
)


@settings(max_examples=400, deadline=None)
@given(op=st.sampled_from(["plus", "minus", "times"]), a=NUMBERS, b=NUMBERS, c=NUMBERS)
def test_arithmetic_getters_are_arithmetic(op: str, a: Any, b: Any, c: Any) -> None:
    """The getters compute whole numbers and differences of ISO texts themselves; every result and error is
    ``quantities.arithmetic``'s."""
    word = {"plus": "plus", "minus": "minus", "times": "times"}[op]
    cond = parse(f"deny t when a {word} b is 1.\ndeny t when a plus b plus c is 1.").rules
    env = Env(Request(principal=Principal(id="u"), action="t", args={"a": a, "b": b, "c": c}), None)
    binary, chain = (compile_value(rule.clauses[0].cond.left) for rule in cond)
    assert _result(lambda: binary(env)) == _result(lambda: arithmetic(op, a, b, "`a " + op + " b`"))
    what = "`a plus b plus c`"
    expected = _result(lambda: arithmetic("plus", arithmetic("plus", a, b, what), c, what))
    assert _result(lambda: chain(env)) == expected


def _result(compute: Any) -> tuple[str, Any]:
    try:
        value = compute()
    except Unevaluable as error:
        return "error", str(error)
    return type(value).__name__, value


@settings(max_examples=400, deadline=None)
@given(
    op=st.sampled_from(["more than", "at least", "less than", "at most"]),
    bound=st.sampled_from(["5", "2.5", "-3", "0.1"]),
    a=st.one_of(NUMBERS, st.just(conditions)),  # the module object stands for a missing argument
)
def test_a_comparison_of_an_argument_with_a_number_is_the_general_one(op: str, bound: str, a: Any) -> None:
    """``amount is more than 5`` reads a whole-number argument itself; every outcome and error is the general
    closure's (``_ordered_number``)."""
    node = parse(f"deny t when a is {op} {bound}.").rules[0].clauses[0].cond
    fast = conditions.Compiler({}).cond(node)
    assert fast.__name__ == "argument"
    general = conditions._ordered_number(
        node.op, compile_value(node.left), conditions.number(node.right[0].value, "the bound"), "`a`"
    )
    env = Env(Request(principal=Principal(id="u"), action="t", args={} if a is conditions else {"a": a}), None)
    assert _result(lambda: fast(env)) == _result(lambda: general(env))


@pytest.mark.parametrize("rule", ["a minus b", "a plus b", "a times b"])
@pytest.mark.parametrize(("args", "missing"), [({"b": 1}, "a"), ({"a": 1}, "b"), ({}, "a"), ({"a": None, "b": 1}, "")])
def test_two_arguments_read_together_say_which_is_missing(rule: str, args: dict[str, Any], missing: str) -> None:
    """Arithmetic on two plain arguments reads them itself; a missing one is named as the argument getters name
    it (the first missing, in reading order), and a null one is arithmetic's error."""
    node = parse(f"deny t when {rule} is 1.").rules[0].clauses[0].cond.left
    getter = compile_value(node)
    assert getter.__name__ == "arguments"
    kind, message = _result(lambda: getter(Env(Request(principal=Principal(id="u"), action="t", args=args), None)))
    assert kind == "error"
    assert (f"argument `{missing}` is missing" == message) if missing else ("not a number" in message)


@settings(max_examples=400, deadline=None)
@given(
    op=st.sampled_from(["more than", "at least", "less than", "at most"]),
    word=st.sampled_from(["plus", "minus", "times"]),
    bound=st.sampled_from(["5", "2.5", "-3", "0.1"]),
    a=st.one_of(NUMBERS, st.just(conditions)),  # the module object stands for a missing argument
    b=st.one_of(NUMBERS, st.just(conditions)),
)
def test_a_comparison_of_two_arguments_arithmetic_with_a_number_is_the_general_one(
    op: str, word: str, bound: str, a: Any, b: Any
) -> None:
    """``quantity times price is at most 700`` reads and computes whole-number arguments itself; every outcome
    and error is the general closure's (``_ordered_number`` over the arithmetic getter)."""
    node = parse(f"deny t when a {word} b is {op} {bound}.").rules[0].clauses[0].cond
    fast = conditions.Compiler({}).cond(node)
    assert fast.__name__ == "ordered_pair"
    what = f"`{describe(node.left)}`"
    general = conditions._ordered_number(
        node.op, compile_value(node.left), conditions.number(node.right[0].value, "the bound"), what
    )
    args = {name: value for name, value in (("a", a), ("b", b)) if value is not conditions}
    env = Env(Request(principal=Principal(id="u"), action="t", args=args), None)
    assert _result(lambda: fast(env)) == _result(lambda: general(env))


@settings(max_examples=200, deadline=None)
@given(start=st.one_of(MOMENTS, st.just(conditions)))
def test_a_window_around_now_reads_its_argument_as_the_getter(start: Any) -> None:
    """``start is within 48 hours after now`` reads a text argument itself; a missing or non-text one goes
    through the argument getter, whose errors it keeps."""
    args = {} if start is conditions else {"start": start}
    assert outcome(FAST, args)[:2] == outcome(GENERAL, args)[:2]


COMMON = """
deny t when customer.status is present and customer.status is "flagged".
deny t when recipient is present and recipient does not end with "@example.com".
deny t when note is missing and code starts with "x".
deny t when customer.tier is missing and level is between 3 and 5.
deny t when amount is more than 50 and user does not have role "vip".
require approval from role "boss" for t when user has role "clerk" and amount is between 10 and 20.
deny t for agent "bot1" when urgent is true.
deny t for tenant "acme" when customer.name ends with "evil" or customer.name is "x".
allow t for user "alice" when category is "books".
allow t for users with role "clerk" when customer.status is "ok" and amount is less than 100.
allow t when customer.level is between 1 and 3 or category is one of "toys", "games".
allow t when customer.status is missing and customer is present.
"""
VALUES = st.one_of(
    st.integers(-5, 120),
    st.sampled_from(["flagged", "ok", "books", "toys", "x1", "evil", "a@example.com", "c@evil.com", "", None]),
    st.sampled_from([True, False, 2.5, 3.0, 10**70, [1], ["ok"]]),
)
ARGS = st.dictionaries(
    st.sampled_from(["customer", "recipient", "note", "code", "level", "amount", "urgent", "category"]),
    st.one_of(VALUES, st.dictionaries(st.sampled_from(["status", "tier", "level", "name"]), VALUES, max_size=3)),
    max_size=8,
)


def general_common(default: str) -> PolicyEngine:
    """The common-shapes bundle compiled without reading arguments in the conditions, without literal bounds for
    ``between``, without inlined roles, names and subjects."""
    between, check = conditions._between, compiler._check
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conditions, "_argument_path", lambda node: None)
        patch.setattr(conditions, "_between", lambda left, low, high, what, *_: between(left, low, high, what))
        patch.setattr(conditions, "_both", lambda first, second: conditions._all([first, second, _true]))
        patch.setattr(compiler, "_check", lambda guard, test, lone: check(guard, test, None))
        return PolicyEngine.from_text(default + COMMON, "common.policy")


def _true(env: Env) -> bool:
    return True


COMMON_ENGINES = {
    default: (PolicyEngine.from_text(default + COMMON, "common.policy"), general_common(default))
    for default in ("", "default allow.\n")
}


@settings(max_examples=600, deadline=None)
@given(
    args=ARGS,
    user=st.sampled_from(["alice", "bob"]),
    roles=st.frozensets(st.sampled_from(["vip", "clerk", "boss"])),
    agent=st.sampled_from(["bot1", "bot2"]),
    tenant=st.sampled_from(["acme", "other", None]),
    default=st.sampled_from(["", "default allow.\n"]),
)
def test_common_conditions_decide_as_the_general_closures(
    args: dict[str, Any], user: str, roles: frozenset[str], agent: str, tenant: str | None, default: str
) -> None:
    """Presence, text equality, affixes and whole-number ``between`` at argument paths, inlined roles and
    presence in a two-part ``and``, and lone subjects give the general closures' decisions, notes included."""
    request = Request(
        principal=Principal(id=user, roles=roles),
        agent=AgentInfo(id=agent),
        action="t",
        args=args,
        context=RequestContext(tenant=tenant, time=NOW),
    )
    fast, general = COMMON_ENGINES[default]
    assert fast.decide(request).model_dump() == general.decide(request).model_dump()


def test_the_common_closures_are_the_ones_compiled() -> None:
    def compiled(condition: str) -> Any:
        return conditions.Compiler({}).cond(parse(f"deny t when {condition}.").rules[0].clauses[0].cond)

    assert compiled("a.b is present").__name__ == "argument_presence"
    assert compiled('a is "x"').__name__ == "eq_argument"
    assert compiled('a.b is "x"').__name__ == "eq_nested"
    assert compiled('a.b ends with "x"').__name__ == "affix_argument"
    assert compiled("a is between 1 and 3").__name__ == "between_whole"
    assert compiled('a is 1 and user does not have role "r"').__name__ == "then_role"
    for inlined in ('a is present and a is "x"', 'user has role "r" and a is 1'):
        assert "first" not in compiled(inlined).__code__.co_freevars  # one closure: the first part is not called
    lone = PolicyEngine.from_text('deny t for agent "b" when a is 1.\ndeny t for user "u" when a is 1.').bundle.rules
    assert all("guard" not in rule.check.__code__.co_freevars for rule in lone)


@pytest.mark.parametrize(
    ("rule", "args", "expected"),
    [
        ('deny t when today is "2026-01-05".', {}, "deny"),  # a date equals its ISO text, as `is` compares them
        ('deny t when now is "2026-01-05T12:00:00Z".', {}, "deny"),
        ('deny t when today is not "2026-01-06".', {}, "deny"),
        ('deny t when amount is "x".', {"amount": float("nan")}, "deny"),  # NaN equals nothing: fails closed
        ('deny t when amount is "x".', {"amount": [1, float("nan")]}, "deny"),
        ('deny t when amount.b is "x".', {"amount": {"b": float("nan")}}, "deny"),
        ('deny t when amount is "x".', {"amount": 5}, "allow"),
    ],
)
def test_equality_with_a_text_is_the_general_equality_for_other_values(
    rule: str, args: dict[str, Any], expected: str
) -> None:
    """``x is "text"`` compares a string itself; a date, a timestamp or a NaN is compared as ``_binary``'s
    equality compares it (the fast path said false: a deny rule that never denied)."""
    fast = PolicyEngine.from_text("default allow.\n" + rule)
    assert outcome(fast, args)[0][0] == expected
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            conditions, "_eq_text", lambda left, text, path=None: conditions._binary("eq", left, lambda e: text, "")
        )
        patch.setattr(conditions, "_argument_path", lambda node: None)
        general = PolicyEngine.from_text("default allow.\n" + rule)
    assert outcome(fast, args) == outcome(general, args)


def test_an_allow_unless_a_text_does_not_allow_a_nan() -> None:
    """``allow ... when amount is not "x"`` cannot be evaluated for a NaN, so it does not allow."""
    engine = PolicyEngine.from_text('allow t when amount is not "x".')
    assert outcome(engine, {"amount": float("nan")})[0][0] == "deny"
    assert outcome(engine, {"amount": 5})[0][0] == "allow"


@pytest.mark.parametrize(
    "rule",
    [
        "deny t when a is more than 5 and b is more than 5.",
        "deny t when a is more than 5 and b is more than 5 and c is more than 5.",
        'deny t when a is "x" and b starts with "y".',
    ],
)
def test_an_and_whose_parts_all_fail_names_the_first_error(rule: str) -> None:
    """Neither part false, every part unevaluable: the first error is the reason, whatever the number of parts
    (the two-part ``and`` named the second)."""
    notes = outcome(PolicyEngine.from_text("default allow.\n" + rule), {})[1:]
    assert notes == [("<policy>#1", "failed closed: argument `a` is missing")]
