"""Policy language v2: quantifiers, exact arithmetic, time, multi-key lookups, named conditions, resolver
declarations and presence; parsed, checked, decided and formatted."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentcore import Effect, PolicyCheckError, PolicyEngine, PolicySyntaxError, Request
from agentcore.policies import InMemoryContext, Principal, RequestContext, ast, parse
from agentcore.policies.ast import structure
from agentcore.policies.checker import check
from agentcore.policies.formatter import format_file

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # a Monday, 13:00 in Madrid


def decide(text: str, args: dict[str, Any], context: InMemoryContext | None = None, at: datetime = NOW) -> Any:
    engine = PolicyEngine.from_text("default allow.\n" + text, "v2.policy")
    request = Request(principal=Principal(id="u"), action="t", args=args, context=RequestContext(time=at))
    return engine.decide(request, context or InMemoryContext())


def denied(text: str, args: dict[str, Any], context: InMemoryContext | None = None, at: datetime = NOW) -> bool:
    return decide(text, args, context, at).effect is Effect.DENY


def note(text: str, args: dict[str, Any], context: InMemoryContext | None = None) -> str:
    decision = decide(text, args, context)
    assert decision.effect is Effect.DENY
    return str(decision.reasons[0].note)


# ---- 1. quantifiers ---------------------------------------------------------------------------------------------
RECEIPTS = "deny t when any item in line_items has item.amount is more than 500 and item.receipt is missing."
CATEGORIES = 'deny t unless every item in line_items has item.category is one of "travel", "meals", "lodging".'
VOUCHERS = 'deny t when count of payment in payments where payment.method starts with "voucher_" is more than 1.'


def test_any_item_has() -> None:
    assert denied(RECEIPTS, {"line_items": [{"amount": 10}, {"amount": 600}]})
    assert not denied(RECEIPTS, {"line_items": [{"amount": 10}, {"amount": 600, "receipt": "r.pdf"}]})
    assert not denied(RECEIPTS, {"line_items": []})


def test_every_item_has() -> None:
    assert not denied(CATEGORIES, {"line_items": [{"category": "travel"}, {"category": "meals"}]})
    assert denied(CATEGORIES, {"line_items": [{"category": "travel"}, {"category": "spa"}]})
    assert not denied(CATEGORIES, {"line_items": []})  # every item of no items


def test_count_where() -> None:
    one, two = [{"method": "voucher_a"}, {"method": "card"}], [{"method": "voucher_a"}, {"method": "voucher_b"}]
    assert not denied(VOUCHERS, {"payments": one})
    assert denied(VOUCHERS, {"payments": two})


def test_no_item_has_and_nested_quantifiers_over_a_resolver() -> None:
    rule = (
        'deny t when any order in customer(customer_id).orders has any line in order.lines has line.sku is "recalled".'
    )
    customers = {"c1": {"orders": [{"lines": [{"sku": "ok"}]}, {"lines": [{"sku": "recalled"}]}]}}
    context = InMemoryContext(resolvers={"customer": customers.get})
    assert denied(rule, {"customer_id": "c1"}, context)
    customers["c2"] = {"orders": [{"lines": [{"sku": "ok"}]}]}
    assert not denied(rule, {"customer_id": "c2"}, context)
    assert denied('deny t unless no tag in tags has tag is "x".', {"tags": ["a", "x"]})


def test_quantifier_over_resolver_facts_and_membership() -> None:
    rule = "deny t unless every payment in payments has customer(customer_id).payment_methods contains payment.method."
    context = InMemoryContext(resolvers={"customer": {"c1": {"payment_methods": ["card", "paypal"]}}.get})
    assert not denied(rule, {"customer_id": "c1", "payments": [{"method": "card"}]}, context)
    assert denied(rule, {"customer_id": "c1", "payments": [{"method": "card"}, {"method": "crypto"}]}, context)


def test_texts_inside_a_resolver_record_are_compared_in_canonical_form() -> None:
    """A fact a user could have typed (a profile flag, a list item, a nested key) in a look-alike or zero-width spelling
    still matches the policy's literal, as the arguments and a resolver's top-level text do (before: only the
    latter, so `contains "fraud"` missed a fullwidth "ｆｒａｕｄ" in a list and allowed)."""
    record = {"flags": ["ok", "ｆｒａｕｄ"], "profile": {"ｔｉｅｒ": "gold\u200b"}, "deep": [[{"k": "ｂａｎｎｅｄ"}]]}
    context = InMemoryContext(resolvers={"account": {"a1": record}.get})
    assert denied('deny t when account(id).flags contains "fraud".', {"id": "a1"}, context)
    assert denied('deny t when account(id).profile.tier is "gold".', {"id": "a1"}, context)
    assert denied(
        'deny t when any row in account(id).deep has any x in row has x.k is "banned".', {"id": "a1"}, context
    )
    assert record["flags"] == ["ok", "ｆｒａｕｄ"]  # the resolver's own data is left as it was


def test_quantifiers_are_three_valued_and_fail_closed() -> None:
    rule = "deny t when any item in items has item.amount is more than 5."
    assert denied(rule, {"items": [{"amount": 1}, {"amount": 9}, {}]})  # one item holds: true despite the other
    assert "failed closed" in note(rule, {"items": [{"amount": 1}, {}]})  # unknown item, no true one
    assert "not a list" in note(rule, {"items": "oops"})
    assert "missing" in note(rule, {})


def test_inner_variable_shadows_outer_one() -> None:
    rule = "deny t when any x in outer has any x in x.inner has x is 3."
    assert denied(rule, {"outer": [{"inner": [1, 3]}]})
    assert not denied(rule, {"outer": [{"inner": [1, 2]}]})


# ---- 2. exact arithmetic ----------------------------------------------------------------------------------------
def test_decimals_are_exact() -> None:
    assert not denied("deny t when 0.1 plus 0.2 is not 0.3.", {})
    assert not denied("deny t when a + b is not 0.3.", {"a": 0.1, "b": 0.2})
    assert denied("deny t when a plus b is at least 0.3.", {"a": 0.1, "b": 0.2})


def test_sum_of_and_operators() -> None:
    total = "deny t when sum of payment.amount for payment in payments is not total."
    assert not denied(total, {"payments": [{"amount": 10.1}, {"amount": 20.2}], "total": 30.3})
    assert denied(total, {"payments": [{"amount": 10.1}, {"amount": 20.2}], "total": 30.31})
    per_head = "deny t when length of attendees times 30 is more than budget."
    assert denied(per_head, {"attendees": ["a", "b", "c"], "budget": 89.99})
    assert not denied(per_head, {"attendees": ["a", "b", "c"], "budget": 90})
    assert denied("deny t when (a minus b) ÷ 4 × 2 is 1.5.", {"a": 5, "b": 2})
    assert denied("deny t when a minus b divided by 4 is 4.5.", {"a": 5, "b": 2})  # divided binds tighter
    assert denied("deny t when max(a, b, 3) minus min(a, b) plus abs(c) is 10.", {"a": 1, "b": 7, "c": -4})
    assert denied("deny t when max of i.n for i in items is 9.", {"items": [{"n": 2}, {"n": 9}]})
    assert denied("deny t when amount is more than 1000 USD.", {"amount": 1000.01})


def test_division_by_zero_and_overflow_fail_closed_with_a_reason() -> None:
    assert "divides by zero" in note("deny t when total ÷ n is more than 5.", {"total": 10, "n": 0})
    assert "too large" in note("deny t when a times a times a is more than 5.", {"a": 10**25})
    assert "not a number" in note("deny t when a plus 1 is more than 5.", {"a": "ten"})
    allow = "default deny.\nallow t when total ÷ n is less than 5."
    engine = PolicyEngine.from_text(allow)
    request = Request(principal=Principal(id="u"), action="t", args={"total": 1, "n": 0})
    assert engine.decide(request).effect is Effect.DENY


# ---- 3. time ----------------------------------------------------------------------------------------------------
def test_within_before_now_on_a_resolved_timestamp() -> None:
    rule = "deny t when order(order_id).created_at is within 24 hours before now."
    orders = {"recent": {"created_at": "2026-01-05T01:00:00Z"}, "old": {"created_at": "2026-01-03T11:00:00+00:00"}}
    context = InMemoryContext(resolvers={"order": orders.get})
    assert denied(rule, {"order_id": "recent"}, context)
    assert not denied(rule, {"order_id": "old"}, context)


def test_dates_durations_and_today() -> None:
    assert denied("deny t when start_date is after today.", {"start_date": "2026-01-06"})
    assert not denied("deny t when start_date is after today.", {"start_date": "2026-01-05"})
    trip = "deny t unless end_date minus start_date is at most 14 days."
    assert not denied(trip, {"start_date": "2026-01-01", "end_date": "2026-01-15"})
    assert denied(trip, {"start_date": "2026-01-01", "end_date": "2026-01-16"})
    assert denied("deny t when deadline is before now plus 2 days.", {"deadline": "2026-01-07T11:59:00Z"})
    assert denied("deny t when start is within 1 hour of now.", {"start": "2026-01-05T12:30:00+00:00"})
    assert "not a date" in note("deny t when start_date is after today.", {"start_date": "soon"})


def test_weekday_and_time_of_day_in_a_time_zone() -> None:
    late = 'deny t when time of day of now in "Europe/Madrid" is after 18:00.'
    assert not denied(late, {})
    assert denied(late, {}, at=datetime(2026, 1, 5, 17, 30, tzinfo=UTC))  # 18:30 in Madrid
    weekend = 'deny t when weekday of now in "Pacific/Kiritimati" is "tuesday".'  # UTC+14: already Tuesday
    assert denied(weekend, {}, at=datetime(2026, 1, 5, 12, 0, tzinfo=UTC))
    assert denied('deny t when weekday of start_date is "saturday".', {"start_date": "2026-01-10"})


def test_unknown_time_zone_is_a_located_check_error() -> None:
    with pytest.raises(PolicyCheckError) as caught:
        PolicyEngine.from_text('deny t when weekday of now in "Mars/Base" is "monday".', "z.policy")
    assert "z.policy:1:" in str(caught.value) and "Europe/Madrid" in str(caught.value)


# ---- 4. lookups keyed on several values -------------------------------------------------------------------------
def test_multi_key_lookups_from_arguments_fields_and_variables() -> None:
    flights = {("BA1", "2026-01-05"): {"status": "cancelled"}, ("BA2", "2026-01-05"): {"status": "ok"}}
    seen: list[tuple[str, str]] = []

    def flight(number: str, date: str) -> dict[str, str] | None:
        seen.append((number, date))
        return flights.get((number, date))

    context = InMemoryContext(resolvers={"flight": flight})
    assert denied('deny t when flight(number, date).status is "cancelled".', {"number": "BA1", "date": "2026-01-05"},
                  context)  # fmt: skip
    assert denied('deny t when flight(leg.number, leg.date).status is "cancelled".',
                  {"leg": {"number": "BA1", "date": "2026-01-05"}}, context)  # fmt: skip
    legs = [{"number": "BA2", "date": "2026-01-05"}, {"number": "BA1", "date": "2026-01-05"}]
    rule = 'deny t when any leg in legs has flight(leg.number, leg.date).status is "cancelled".'
    assert denied(rule, {"legs": legs}, context)
    assert not denied(rule, {"legs": legs[:1]}, context)
    assert ("BA2", "2026-01-05") in seen
    single = InMemoryContext(resolvers={"order": {"o1": {"status": "pending"}}.get})
    assert not denied('deny t when order(order_id).status is not "pending".', {"order_id": "o1"}, single)


# ---- 5. named conditions ----------------------------------------------------------------------------------------
NAMED = """define "large expense" as amount is more than 1000 USD.
define "risky" as "large expense" and category is "gifts".
deny t when "risky" or amount is more than 5000."""


def test_named_conditions_are_used_in_rules() -> None:
    assert denied(NAMED, {"amount": 1500, "category": "gifts"})
    assert not denied(NAMED, {"amount": 1500, "category": "travel"})
    assert denied(NAMED, {"amount": 6000, "category": "travel"})


@pytest.mark.parametrize(
    ("text", "message", "help"),
    [
        ('define "big" as amount > 5.\ndeny t when "bgi".', 'no condition is named "bgi"', 'did you mean "big"?'),
        ('define "a" as "b".\ndefine "b" as "a".\ndeny t when "a".', 'cycle: "a" -> "b" -> "a"', "never itself"),
        ('define "a" as x > 1.\ndefine "a" as x > 2.', 'the condition "a" is defined twice', "its own name"),
    ],
)
def test_named_condition_errors(text: str, message: str, help: str) -> None:
    with pytest.raises(PolicyCheckError) as caught:
        PolicyEngine.from_text(text, "n.policy")
    rendered = str(caught.value)
    assert message in rendered and help in rendered and "n.policy:" in rendered
    codes = {f.code for f in check([parse(text, "n.policy")])}
    assert codes & {"unknown-condition", "condition-cycle", "duplicate-condition"}


# ---- 6. resolver declarations -----------------------------------------------------------------------------------
DECLARED = """resolver customer(customer_id: string) returns {tier: string, payment_methods: list of string,
    orders: list of order, joined: date}.
resolver order(order_id: string) returns {status: string, created_at: datetime, total: number}.
"""


def findings(rules: str, declarations: str = DECLARED) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in check([parse(declarations + rules, "d.policy")])]


def test_declared_facts_check_clean() -> None:
    rules = (
        'deny t when customer(customer_id).tier is "gold" and any o in customer(customer_id).orders has '
        "o.total is more than 100 and o.created_at is within 2 days before now."
    )
    assert findings(rules) == []


@pytest.mark.parametrize(
    ("rule", "code", "words"),
    [
        ('deny t when custmer(customer_id).tier is "gold".', "unknown-resolver", "custmer"),
        ('deny t when customer(customer_id).teir is "gold".', "unknown-attribute", "teir"),
        ("deny t when any o in customer(customer_id).orders has o.totl > 1.", "unknown-attribute", "totl"),
        ('deny t when customer(a, b).tier is "gold".', "resolver-keys", "takes 1 key"),
        ("deny t when customer(c).tier plus 1 is more than 2.", "type-mismatch", "arithmetic on a string"),
        ("deny t when customer(c).joined is more than 5.", "type-mismatch", "compares a date with a number"),
        ("deny t when order(o).total is after today.", "type-mismatch", "compares dates and times"),
        ("deny t when length of attendees is more than 5 and length of attendees is less than 2.",
         "impossible-condition", "never hold"),
    ],
)  # fmt: skip
def test_declared_facts_catch_mistakes(rule: str, code: str, words: str) -> None:
    found = findings(rule)
    assert any(c == code and words in m for c, m in found), found


def test_declarations_check_types_of_their_own() -> None:
    assert ("unknown-type", "`strng` is not a type") in findings("", "resolver r(id: strng) returns {a: number}.")


def test_without_declarations_facts_are_unchecked() -> None:
    found = findings('deny t when order(o).status is "x".\ndeny u when order(o).total > 1.', declarations="")
    assert [code for code, _ in found] == ["unchecked-facts"]  # one warning per resolver


# ---- 6b. resolver declarations in a schema file next to the bundle ------------------------------------------------
SCHEMA_RULES = """deny t when customer(customer_id).teir is "gold".
deny t when any o in customer(customer_id).orders has o.totl > 1.
deny t when custmer(customer_id).tier is "x".
deny t when customer(customer_id).joined is more than 5.
deny t when order(order_id).created_at is within 2 days before now.
"""


def located(paths: list[Path]) -> list[tuple[str, str, int, int]]:
    engine = PolicyEngine.from_paths(paths)
    return [(f.code, Path(f.file).name, f.line, f.column) for f in check(engine.files)]


def test_schema_file_declares_the_resolvers_of_the_bundle(tmp_path: Path) -> None:
    (tmp_path / "resolvers.schema").write_text("# lookups\n" + DECLARED, encoding="utf-8")
    (tmp_path / "rules.policy").write_text(SCHEMA_RULES, encoding="utf-8")
    assert located([tmp_path]) == [
        ("unknown-attribute", "rules.policy", 1, 13),
        ("unknown-attribute", "rules.policy", 2, 55),
        ("unknown-resolver", "rules.policy", 3, 13),
        ("type-mismatch", "rules.policy", 4, 55),
    ]
    # without the schema file nothing is declared: the facts are unchecked
    assert {code for code, *_ in located([tmp_path / "rules.policy"])} == {"unchecked-facts"}


def test_schema_file_holds_only_declarations(tmp_path: Path) -> None:
    (tmp_path / "r.schema").write_text(DECLARED + 'deny t when a is "b".\n', encoding="utf-8")
    (tmp_path / "rules.policy").write_text("allow t.\n", encoding="utf-8")
    with pytest.raises(PolicySyntaxError) as caught:
        PolicyEngine.from_paths([tmp_path])
    [problem] = caught.value.problems
    assert (Path(problem.file).name, problem.line, problem.column) == ("r.schema", 4, 1)
    assert 'expected "resolver"' in problem.message and "rules, definitions and defaults go in" in problem.help


def test_a_resolver_declared_twice_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "r.schema").write_text(DECLARED, encoding="utf-8")
    (tmp_path / "rules.policy").write_text("resolver order(id: string) returns {status: string}.\n", encoding="utf-8")
    found = check(PolicyEngine.from_paths([tmp_path]).files)
    assert [(f.code, Path(f.file).name, f.line) for f in found] == [("duplicate-resolver", "rules.policy", 1)]
    assert "declared twice (first at" in found[0].message


def test_schema_files_alone_are_no_bundle(tmp_path: Path) -> None:
    (tmp_path / "r.schema").write_text(DECLARED, encoding="utf-8")
    with pytest.raises(PolicySyntaxError, match=r"no \*\.policy files"):
        PolicyEngine.from_paths([tmp_path])


# ---- 7. presence ------------------------------------------------------------------------------------------------
def test_if_present_does_not_fail_closed() -> None:
    rule = 'deny t when customer.status is "flagged" if present.'
    assert not denied(rule, {})
    assert denied(rule, {"customer": {"status": "flagged"}})
    assert denied('deny t when customer.status is "flagged".', {})  # without it: fail closed


# ---- syntax errors ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("deny t when any item in items item.a > 1.", '"has" (a quantifier'),
        ("deny t when count of x in xs x.a > 1 is more than 2.", '"where"'),
        ("deny t when sum of x.a for x items is 3.", '"in"'),
        ('define "x" amount > 3.', '"as"'),
        ("resolver r(id) returns {a: number}.", '":"'),
        ("deny t when a times > 3.", "unexpected `>`"),
    ],
)
def test_syntax_errors_name_what_was_expected(text: str, expected: str) -> None:
    with pytest.raises(PolicySyntaxError) as caught:
        parse(text, "e.policy")
    rendered = str(caught.value)
    assert rendered.startswith("e.policy:1:") and expected in rendered, rendered


def test_a_root_cannot_name_the_items_of_a_list() -> None:
    with pytest.raises(PolicySyntaxError) as caught:
        parse("deny t when any user in users has user.id is 1.", "e.policy")
    assert "e.policy:1:17" in str(caught.value) and "help: use a single word" in str(caught.value)


# ---- formatting -------------------------------------------------------------------------------------------------
EVERYTHING = (
    DECLARED
    + NAMED
    + "\n"
    + "\n".join([RECEIPTS, CATEGORIES, VOUCHERS])
    + """
deny t when (count of x in xs where x.a is 1) times 2 is (a minus b) minus (c plus d) divided by 2.
deny t when (any x in xs has x.a is 1) and (sum of y.b for y in ys) plus 1 is 3 and not (no z in zs has z is 1).
deny t when weekday of (now minus 1 day) in "UTC" is "monday" and start is within 3 hours after now.
deny t when time of day of now is before 09:30 and today in "Asia/Tokyo" is after "2026-01-01".
deny t when flight(leg.number, leg.date).status is "x" if present and abs(a) is at least max(b, 1).
"""
)


def test_fmt_prints_every_new_construct_and_keeps_meaning() -> None:
    parsed = parse(EVERYTHING, "f.policy")
    text = format_file(parsed)
    again = parse(text, "f.policy")
    assert structure(again) == structure(parsed)
    assert format_file(again) == text
    for width in (20, 40, 60):  # wrapped at every clause, operator and list boundary, still the same meaning
        narrow = format_file(parsed, width=width)
        assert structure(parse(narrow, "f.policy")) == structure(parsed), narrow
        assert format_file(parse(narrow, "f.policy"), width=width) == narrow
    assert len(parsed.definitions) == 2 and len(parsed.resolvers) == 2
    deny = parsed.rules[4].clauses[0].cond
    assert isinstance(deny, ast.Compare) and isinstance(deny.left, ast.Arith) and deny.left.op == "times"


# ---- the reference ----------------------------------------------------------------------------------------------
def test_the_reference_v2_bundle_compiles_and_checks_clean() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "policy-language.md").read_text()
    (bundle,) = re.findall(r"```policy\n(# v2.*?)```", doc, re.S)
    engine = PolicyEngine.from_text(bundle, "v2.policy")
    assert len(engine.files[0].rules) == 14 and check(engine.files) == []


def test_explain_quotes_a_condition_written_over_several_lines_as_one_line() -> None:
    engine = PolicyEngine.from_text('deny t when any item in items has item.kind is one of "a",\n    "b".', "q.policy")
    request = Request(principal=Principal(id="u"), action="t", args={"items": [{"kind": "b"}]})
    _, trace = engine.explain(request)
    assert trace == [('item.kind is one of "a", "b"', True)]


def test_explain_traces_each_item_of_a_count() -> None:
    """The fast path of `count of` (items.py) records nothing; a trace must show every item's atom."""
    engine = PolicyEngine.from_text(
        'deny t when count of item in items where item.sku starts with "gift_" is more than 1.'
    )
    items = [{"sku": "gift_a"}, {"sku": "pen"}, {"sku": "gift_b"}]
    request = Request(principal=Principal(id="u"), action="t", args={"items": items})
    decision, trace = engine.explain(request)
    assert decision == engine.decide(request) and decision.effect is Effect.DENY
    atom = 'item.sku starts with "gift_"'
    assert trace == [
        (atom, True),
        (atom, False),
        (atom, True),
        (f"count of item in items where {atom} is more than 1", True),
    ]


def test_gateway_resolvers_take_one_argument_per_key(tmp_path: Path) -> None:
    from agentcore.gateway import Gateway, ToolDenied

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "trips.policy").write_text(
        "allow trips.book.\n"
        'deny trips.book when any leg in legs has flight(leg.number, leg.date).status is "cancelled".\n'
        'deny trips.book when traveller(traveller_id).status is "blocked".\n'
    )
    gw = Gateway(tmp_path / "p", database=str(tmp_path / "gw.db"))

    @gw.tool(name="trips.book")
    def book(traveller_id: str, legs: list[dict[str, str]]) -> str:
        return "booked"

    @gw.resolver("flight")
    def flight(number: str, date: str) -> dict[str, str]:
        return {"status": "cancelled" if (number, date) == ("BA119", "2026-01-20") else "scheduled"}

    @gw.resolver("traveller")
    def traveller(traveller_id: str) -> dict[str, str]:
        return {"status": "blocked" if traveller_id == "t2" else "active"}

    principal = {"id": "ana", "roles": []}
    ok = [{"number": "BA117", "date": "2026-01-20"}]
    assert gw.call("trips.book", {"traveller_id": "t1", "legs": ok}, principal=principal) == "booked"
    with pytest.raises(ToolDenied):
        gw.call("trips.book", {"traveller_id": "t1", "legs": [*ok, {"number": "BA119", "date": "2026-01-20"}]},
                principal=principal)  # fmt: skip
    with pytest.raises(ToolDenied):
        gw.call("trips.book", {"traveller_id": "t2", "legs": ok}, principal=principal)
