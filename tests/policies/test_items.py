"""The fast paths for list items decide exactly as the general closures, on plain and on odd items alike."""

from __future__ import annotations

import operator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import PolicyEngine, Request
from agentcore.policies import Principal, ast, conditions, parse, values
from agentcore.policies.items import Slow, _affix_slice, _cut, _interval, item_tally, item_test, item_value, plain_key
from agentcore.policies.values import equality_key

RULES = """
deny t when any item in items has item.qty is more than 5 and item.price is at least 50.
deny t when every item in items has item.sku starts with "gift_" or item.sku ends with "_x".
deny t when count of item in items where item.sku is one of "a", "b" and item.qty is not 3 is more than 1.
deny t when sum of item.price times item.qty for item in items is more than 400.
deny t when sum of item.price minus 2 plus item.qty for item in items is at most -1.
deny t when no item in items has item.receipt is missing or item.qty < 2.5.
deny t when any n in numbers has n is more than 10 or n is "x".
deny t when any item in items has not item.sku is "a" and item.price is not 7.
deny t when every item in items has item.qty is at most 6.
deny t when no item in items has item.price is more than 2.5.
deny t when count of item in items where item.price is less than 49.5 is at least 2.
deny t when any item in items has item.qty is at least 3 and item.price is less than 50.
deny t when count of item in items where item.sku starts with "gift_" is more than 1.
deny t when count of item in items where item.sku does not end with "_x" is at least 2.
deny t when any item in items has item.sku is one of "a", "d", 7.
deny t when every n in numbers has n is one of 1, 2, 3.
deny t when no n in numbers has n is not one of 4, "x".
"""
KERNELS = 9  # the last rules: one loop each (``tally``), no call per item
KEYS = ["qty", "price", "sku", "receipt"]
ODD = st.one_of(
    st.integers(-3, 80),
    st.sampled_from([10**61, -(10**61), 2.5, 7.0, 50.0, 0.1, True, False, None, "a", "b", "gift_card", "c_x", ""]),
    st.just({"nested": 1}),
    st.just([1]),
)
PLAIN = st.fixed_dictionaries(
    {"qty": st.integers(0, 8), "price": st.sampled_from([0, 2, 7, 49, 50, 51, 100]),
     "sku": st.sampled_from(["a", "b", "gift_card", "c_x", "cx", "d"])},
    optional={"receipt": st.sampled_from(["r1", None])},
)  # fmt: skip
ITEM = st.one_of(PLAIN, st.dictionaries(st.sampled_from(KEYS), ODD, max_size=4), ODD)


def general_engine() -> PolicyEngine:
    """The bundle compiled without the fast paths."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conditions, "item_tally", lambda cond, var: None)
        patch.setattr(values, "item_tally", lambda cond, var: None)
        patch.setattr(values, "item_value", lambda value, var: None)
        return PolicyEngine.from_text("default allow.\n" + RULES, "items.policy")


FAST, GENERAL = PolicyEngine.from_text("default allow.\n" + RULES, "items.policy"), general_engine()


def outcome(engine: PolicyEngine, args: dict[str, Any]) -> list[tuple[str, str | None]]:
    decision = engine.decide(Request(principal=Principal(id="u"), action="t", args=args))
    return [(decision.effect.value, None), *((r.rule_id, r.note) for r in decision.reasons)]


@settings(max_examples=400, deadline=None)
@given(
    items=st.one_of(st.lists(PLAIN, max_size=6), st.lists(ITEM, max_size=6), ODD),
    numbers=st.one_of(st.lists(st.integers(0, 12), max_size=4), st.lists(ODD, max_size=4)),
)
def test_fast_paths_decide_as_the_general_closures(items: Any, numbers: list[Any]) -> None:
    args = {"items": items, "numbers": numbers}
    assert outcome(FAST, args) == outcome(GENERAL, args)


def test_every_rule_of_the_bundle_has_a_fast_path() -> None:
    for rule in parse(RULES).rules:
        cond = rule.clauses[0].cond
        node = cond.left if isinstance(cond, ast.Compare) else cond
        if isinstance(node, (ast.Quantified, ast.CountWhere)):
            assert item_test(node.cond, node.var) is not None, rule.text
        else:
            assert isinstance(node, ast.Fold) and item_value(node.value, node.var) is not None, rule.text


@pytest.mark.parametrize("value", [0, -7, 10**70, "", "a", "gift_card"])
def test_plain_keys_are_the_language_equality(value: Any) -> None:
    assert plain_key(value) == equality_key(value)


def test_a_whole_number_sum_beyond_the_limit_fails_closed_as_the_general_path() -> None:
    """Each product is exact but their sum is not: the sum computed in C says so as ``numeric_total`` does."""
    big = {"price": 9 * 10**29, "qty": 10**30, "sku": "a"}
    args = {"items": [big, big], "numbers": []}
    assert outcome(FAST, args) == outcome(GENERAL, args)
    assert "too large" in str(outcome(FAST, args)[1:])


@pytest.mark.parametrize(
    "condition",
    [
        'count of item in items where item.sku starts with "gift_" is more than 2',
        "sum of item.price times item.qty for item in items is at most 5",
    ],
)
def test_a_count_or_sum_compared_with_a_number_reads_its_list_itself(condition: str) -> None:
    """The comparison reads the list argument and runs the fast path itself (one call fewer than the getter)."""
    test = conditions.Compiler({}).cond(parse(f"deny t when {condition}.").rules[0].clauses[0].cond)
    assert test.__name__ == "ordered_list"


def test_the_commonest_item_tests_run_their_own_loop() -> None:
    """The rules above the general ones each get a loop with the test written in, not a call per item."""
    for rule in parse(RULES).rules[-KERNELS:]:
        cond = rule.clauses[0].cond
        node = cond.left if isinstance(cond, ast.Compare) else cond
        assert isinstance(node, (ast.Quantified, ast.CountWhere))
        tally = item_tally(node.cond, node.var)
        assert tally is not None and "_calling" not in tally.__qualname__, rule.text


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from(["gt", "ge", "lt", "le"]),
    bound=st.one_of(st.integers(-20, 20), st.decimals(-20, 20, places=2), st.sampled_from([10**70, -(10**70)])),
    whole=st.one_of(st.integers(-25, 25), st.sampled_from([10**70, -(10**70), 10**70 + 1])),
)
def test_an_interval_and_its_cut_compare_whole_numbers_as_the_operator(
    op: str, bound: int | Decimal, whole: int
) -> None:
    """The item loops test ``cut < n`` (one comparison of whole numbers) for the interval ``low < n < high``."""
    low, high = _interval(op, bound)
    assert (low < whole < high) is getattr(operator, op)(whole, bound)
    cut, above = _cut(low, high)
    assert ((cut < whole) is above) is getattr(operator, op)(whole, bound)


@pytest.mark.parametrize(
    "rule",
    [
        "any item in items has item.qty is more than 5",
        "any item in items has item.qty is more than 5 and item.price is at least 0",
        'any item in items has item.sku starts with "g"',
    ],
)
def test_a_tally_stops_at_the_items_it_was_asked_for(rule: str) -> None:
    """``any`` stops at the first item that holds: a later item that the fast path cannot read (a field is
    missing, or it is no object) is never read, as the general loop never reads it."""
    cond = parse(f"deny t when {rule}.").rules[0].clauses[0].cond
    assert isinstance(cond, ast.Quantified)
    tally = item_tally(cond.cond, cond.var)
    assert tally is not None
    first, held = {"qty": 1, "price": 1, "sku": "a"}, {"qty": 9, "price": 1, "sku": "g"}
    for later in ({"price": 1}, "not an object", [held]):
        items = [first, held, held, later]
        assert tally(items, True, 1) == 1 and tally(items[:3], True, 0) == 2 and tally(items[:3], False, 0) == 1
        with pytest.raises(Slow):
            tally(items, True, 0)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab_", max_size=3), value=st.text(alphabet="ab_", max_size=5), prefix=st.booleans())
def test_an_affix_slice_is_starts_and_ends_with(text: str, value: str, prefix: bool) -> None:
    """The item loops compare a slice instead of calling ``startswith``/``endswith``: the same test, the empty
    text included (every text starts and ends with it)."""
    expected = value.startswith(text) if prefix else value.endswith(text)
    assert (value[_affix_slice(text, prefix)] == text) is expected


def test_an_item_whose_first_part_is_false_is_not_read_further() -> None:
    """``a and b`` over items: an item whose ``a`` is false is false, as ``and`` says, whatever its second field
    holds (missing, text, a decimal), so the loop takes the list instead of the general closures."""
    rule = parse("deny t when any item in items has item.qty is more than 5 and item.price is at least 50.")
    cond = rule.rules[0].clauses[0].cond
    assert isinstance(cond, ast.Quantified)
    tally = item_tally(cond.cond, cond.var)
    assert tally is not None
    items = [{"qty": 1}, {"qty": 2, "price": "x"}, {"qty": 3, "price": 2.5}, {"qty": 9, "price": 60}]
    assert tally(items, True, 1) == 1 and tally(items[:3], True, 0) == 0 and tally(items[:3], False, 0) == 3
    with pytest.raises(Slow):
        tally([{"qty": 9, "price": "x"}], True, 1)
    args = {"items": items, "numbers": []}
    assert outcome(FAST, args) == outcome(GENERAL, args)
