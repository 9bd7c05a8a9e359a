"""Fast paths for quantifiers, ``count of`` and folds: their condition or value as a function of the item itself.

The general closures read an item through ``Env.bound`` and check every type on the way. The common bodies
(fields of the item compared with literals, whole-number arithmetic on them) are compiled here once more, into
functions of the item that handle plain JSON only: an object whose fields are whole numbers and text. Anything
else (a missing field, a decimal, a non-object item) raises :class:`Slow`, and that item is evaluated by the
general closures, so results, errors and fail-closed outcomes are exactly theirs. Quantifiers, counts and sums
take a whole list at once (:func:`item_tally`, :func:`item_total`), and a list with one such item is evaluated
by the general closures in full.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Protocol

from agentcore.policies import ast
from agentcore.policies.quantities import LIMIT, exact
from agentcore.text import canonical_text

ItemTest = Callable[[Any], bool]
ItemValue = Callable[[Any], Any]


class Tally(Protocol):
    """``tally(items, wanted, stop)``: how many items' test is ``wanted``; ``tally(items)`` counts those that hold."""

    def __call__(self, items: list[Any], wanted: bool = True, stop: int = 0) -> int: ...


_PLAIN = (int, str)  # the types the fast paths compute with (not bool: its type is bool, not int)


class Slow(Exception):
    """This item needs the general evaluation."""


def item_test(cond: ast.Cond, var: str) -> ItemTest | None:
    """``cond`` as a function of the item bound to ``var``, or None when its form has no fast path."""
    if isinstance(cond, ast.Not):
        inner = item_test(cond.item, var)
        return None if inner is None else lambda item: not inner(item)
    if isinstance(cond, (ast.And, ast.Or)):
        parts = [item_test(part, var) for part in cond.items]
        if any(part is None for part in parts):
            return None
        tests = tuple(p for p in parts if p is not None)
        if len(tests) == 2:
            first, second = tests
            if isinstance(cond, ast.And):
                return _both_ordered(first, second) or (lambda item: first(item) and second(item))
            return lambda item: first(item) or second(item)
        if isinstance(cond, ast.And):
            return lambda item: all(test(item) for test in tests)
        return lambda item: any(test(item) for test in tests)
    if isinstance(cond, ast.Compare):
        return _compare(cond, var)
    return None


def item_tally(cond: ast.Cond, var: str) -> Tally | None:
    """``cond`` over a whole list: ``tally(items, wanted, stop)`` counts the items whose test is ``wanted``,
    stopping once ``stop`` are found (0: count them all), or raises :class:`Slow`; None without a fast path.

    The commonest tests (an ordered comparison of a field or two, ``is one of``, ``starts/ends with``) bring
    their own loop with the test written into it, as ``test.tally``: a function call per item was most of
    their cost. Any other fast test is called once per item.
    """
    test = item_test(cond, var)
    if test is None:
        return None
    tally: Tally | None = getattr(test, "tally", None)
    return tally or _calling(test)


def _calling(test: ItemTest) -> Tally:
    def tally(items: list[Any], wanted: bool = True, stop: int = 0) -> int:
        found = 0
        for item in items:
            if test(item) is wanted:
                found += 1
                if found == stop:
                    break
        return found

    return tally


def item_total(value: ItemValue) -> Callable[[list[Any]], int]:
    """The sum of the whole-number fast value over a list (``whole_numbers(value)``), unbounded; raises
    :class:`Slow` as ``value`` does. Products of two fields are summed in one loop, others in C."""
    total: Callable[[list[Any]], int] | None = getattr(value, "total", None)
    return total or (lambda items: sum(map(value, items)))


def item_value(value: ast.Value, var: str) -> ItemValue | None:
    """``value`` as a function of the item (a whole number or text), or None when it has no fast path."""
    if isinstance(value, ast.Var) and value.name == var and len(value.parts) <= 1:
        return _field(value.parts[0]) if value.parts else _itself
    if isinstance(value, ast.Lit) and type(value.value) in _PLAIN:
        constant = canonical_text(value.value) if isinstance(value.value, str) else value.value
        return lambda item: constant
    if isinstance(value, ast.Arith) and value.op != "divided":
        return _arith(value.op, item_value(value.left, var), item_value(value.right, var))
    if isinstance(value, ast.Plus):
        terms = [item_value(term, var) for term in value.terms]
        first, *rest = terms
        for term in rest:
            first = _arith("plus", first, term)
        return first
    return None


def _itself(item: Any) -> Any:
    if type(item) in _PLAIN:
        return item
    raise Slow


def _field(name: str) -> ItemValue:
    def field(item: Any) -> Any:
        if type(item) is dict:
            found = item.get(name, Slow)
            if type(found) in _PLAIN:
                return found
        raise Slow

    field.field = name  # type: ignore[attr-defined]  # lets the fused paths below read the object directly
    return field


def whole_numbers(value: ItemValue | None) -> bool:
    """Does the fast path ``value`` give only whole numbers (arithmetic, not a field that may be text)?"""
    return getattr(value, "whole", False)


def _field_of(value: ItemValue) -> str | None:
    """The field a value made by :func:`_field` reads, else None."""
    return getattr(value, "field", None)


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "plus": operator.add, "minus": operator.sub, "times": operator.mul,
    "gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le,
}  # fmt: skip


def _arith(op: str, left: ItemValue | None, right: ItemValue | None) -> ItemValue | None:
    if left is None or right is None:
        return None
    compute = _OPERATORS[op]
    names = _field_of(left), _field_of(right)
    if names[0] is not None and names[1] is not None:
        return _fields_arith(compute, names[0], names[1])

    def whole(item: Any) -> int:
        a, b = left(item), right(item)
        if type(a) is not int or type(b) is not int:
            raise Slow
        result: int = compute(a, b)
        if -LIMIT < result < LIMIT:
            return result
        raise Slow  # the general path says why it cannot be computed

    whole.whole = True  # type: ignore[attr-defined]
    return whole


def _fields_arith(compute: Callable[[Any, Any], Any], first: str, second: str) -> ItemValue:
    """``item.price times item.qty``, the commonest arithmetic on items, read straight from the object."""

    def fields(item: Any) -> int:
        if type(item) is dict:
            a, b = item.get(first), item.get(second)
            if type(a) is int and type(b) is int:
                result: int = compute(a, b)
                if -LIMIT < result < LIMIT:
                    return result
        raise Slow

    times, low = compute is operator.mul, -LIMIT  # the commonest product computed inline; the bound once

    def total(items: list[Any]) -> int:
        """The sum of ``fields`` over the items, in one loop (no call per item)."""
        result = 0
        try:
            for item in items:
                if type(item) is not dict:  # per item: a fifth of the cost of checking all types at once
                    raise Slow
                a, b = item[first], item[second]
                if type(a) is not int or type(b) is not int:
                    raise Slow
                product = a * b if times else compute(a, b)
                if not low < product < LIMIT:
                    raise Slow
                result += product
        except KeyError:
            raise Slow from None
        return result

    fields.whole = True  # type: ignore[attr-defined]
    fields.total = total  # type: ignore[attr-defined]  # for item_total
    return fields


def plain_key(value: Any) -> tuple[str, Any]:
    """``values.equality_key`` of a whole number or text (the only values the fast paths compare)."""
    return ("str", value) if type(value) is str else ("number", value)


def _compare(cond: ast.Compare, var: str) -> ItemTest | None:
    op, operands = cond.op, cond.right
    if op in ("missing", "present"):
        named = isinstance(cond.left, ast.Var) and cond.left.name == var and len(cond.left.parts) == 1
        return _presence(cond.left.parts[0], op == "missing") if named else None  # type: ignore[union-attr]
    left = item_value(cond.left, var)
    if left is None:
        return None
    literals = [v.value for v in operands if isinstance(v, ast.Lit)]
    if len(literals) != len(operands) or not operands:
        return None
    if op in ("gt", "ge", "lt", "le") and type(literals[0]) in (int, float):
        return _ordered(op, left, exact(literals[0], "the bound"))
    if op in ("eq", "ne", "one_of", "not_one_of") and all(type(v) in _PLAIN for v in literals):
        keys = frozenset(plain_key(canonical_text(v) if isinstance(v, str) else v) for v in literals)
        return _member(left, keys, op in ("ne", "not_one_of"))
    if op in ("starts_with", "ends_with", "not_starts_with", "not_ends_with") and isinstance(literals[0], str):
        return _affix(left, canonical_text(literals[0]), "starts" in op, op.startswith("not_"))
    return None


def _interval(op: str, bound: int | Decimal) -> tuple[float | int, float | int]:
    """``(low, high)``: a whole number ``n`` compares ``op`` with ``bound`` exactly when ``low < n < high``,
    so the loops below compare inline instead of calling an operator per item."""
    if op in ("gt", "ge"):
        return (math.floor(bound) if op == "gt" else math.ceil(bound) - 1), math.inf
    return -math.inf, (math.ceil(bound) if op == "lt" else math.floor(bound) + 1)


def _cut(low: float | int, high: float | int) -> tuple[int, bool]:
    """``(cut, above)``: a whole number ``n`` lies in the :func:`_interval` ``(low, high)`` (one end infinite)
    exactly when ``(cut < n) is above``; one comparison of whole numbers instead of two, one with infinity."""
    if high == math.inf:
        return int(low), True
    return int(high) - 1, False  # n < high, that is not n >= high, that is not high - 1 < n


def _ordered(op: str, left: ItemValue, bound: Any) -> ItemTest:
    compare, name = _OPERATORS[op], _field_of(left)
    if name is not None:
        low, high = _interval(op, bound)
        cut, above = _cut(low, high)

        def ordered_field(item: Any) -> bool:
            """``item.qty is more than 5``: read straight from the object."""
            if type(item) is dict:
                value = item.get(name)
                if type(value) is int:
                    return bool(compare(value, bound))
            raise Slow

        def tally(items: list[Any], wanted: bool = True, stop: int = 0) -> int:
            found, target = 0, above is wanted  # an item's test is ``wanted`` when ``cut < value`` is this
            try:
                for item in items:
                    if type(item) is not dict:
                        raise Slow
                    value = item[name]
                    if type(value) is not int:
                        raise Slow
                    if (cut < value) is target:
                        found += 1
                        if found == stop:
                            break
            except KeyError:
                raise Slow from None
            return found

        ordered_field.ordered = (name, compare, bound, low, high)  # type: ignore[attr-defined]  # _both_ordered
        ordered_field.tally = tally  # type: ignore[attr-defined]  # for item_tally
        return ordered_field

    def ordered(item: Any) -> bool:
        value = left(item)
        if type(value) is not int:
            raise Slow
        return bool(compare(value, bound))

    return ordered


def _both_ordered(first: ItemTest, second: ItemTest) -> ItemTest | None:
    """``item.qty is more than 5 and item.price is at least 50`` in one function (a call per item, not three);
    None unless both parts are ordered comparisons of fields. Like ``and``, an item whose first part is false is
    false whatever its second field holds, which is then not read; any other item it cannot take goes the
    general way, which gives the same result."""
    ordered_a, ordered_b = getattr(first, "ordered", None), getattr(second, "ordered", None)
    if ordered_a is None or ordered_b is None:
        return None
    (name_a, compare_a, bound_a, low_a, high_a), (name_b, compare_b, bound_b, low_b, high_b) = ordered_a, ordered_b
    (cut_a, above_a), (cut_b, above_b) = _cut(low_a, high_a), _cut(low_b, high_b)

    def both_ordered(item: Any) -> bool:
        if type(item) is dict:
            a = item.get(name_a)
            if type(a) is int:
                if not compare_a(a, bound_a):
                    return False
                b = item.get(name_b)
                if type(b) is int:
                    return bool(compare_b(b, bound_b))
        raise Slow

    def tally(items: list[Any], wanted: bool = True, stop: int = 0) -> int:
        found = 0
        try:
            for item in items:
                if type(item) is not dict:
                    raise Slow
                a = item[name_a]
                if type(a) is not int:
                    raise Slow
                holds = False
                if (cut_a < a) is above_a:  # the second field is read only when the first part holds
                    b = item[name_b]
                    if type(b) is not int:
                        raise Slow
                    holds = (cut_b < b) is above_b
                if holds is wanted:
                    found += 1
                    if found == stop:
                        break
        except KeyError:
            raise Slow from None
        return found

    both_ordered.tally = tally  # type: ignore[attr-defined]  # for item_tally
    return both_ordered


def _member(left: ItemValue, keys: frozenset[Any], negated: bool) -> ItemTest:
    """``is one of`` literals. On the item itself or a field, the item is read here and text looked up among
    the text literals, a whole number among the numbers (``plain_key``'s equality, without building keys)."""
    texts = frozenset(value for kind, value in keys if kind == "str")
    numbers = frozenset(value for kind, value in keys if kind == "number")
    name = _field_of(left)
    if name is None and left is not _itself:
        return lambda item: (plain_key(left(item)) in keys) is not negated

    def member(item: Any) -> bool:
        value = item if name is None else item.get(name) if type(item) is dict else Slow
        kind = type(value)
        if kind is str:
            return (value in texts) is not negated
        if kind is int:
            return (value in numbers) is not negated
        raise Slow

    def tally(items: list[Any], wanted: bool = True, stop: int = 0) -> int:
        found, member = 0, wanted is not negated  # an item's test is ``wanted`` when its membership is this
        for item in items:
            value = item if name is None else item.get(name) if type(item) is dict else Slow
            kind = type(value)
            if kind is str:
                listed = value in texts
            elif kind is int:
                listed = value in numbers
            else:
                raise Slow
            if listed is member:
                found += 1
                if found == stop:
                    break
        return found

    member.tally = tally  # type: ignore[attr-defined]  # for item_tally
    return member


def _affix(left: ItemValue, text: str, prefix: bool, negated: bool) -> ItemTest:
    name = _field_of(left)
    if name is not None:

        def affix_field(item: Any) -> bool:
            """``item.sku starts with "gift_"``: read straight from the object."""
            if type(item) is dict:
                value = item.get(name)
                if type(value) is str:
                    return (value.startswith(text) if prefix else value.endswith(text)) is not negated
            raise Slow

        part = _affix_slice(text, prefix)

        def tally(items: list[Any], wanted: bool = True, stop: int = 0) -> int:
            found, affixed = 0, wanted is not negated  # an item's test is ``wanted`` when its affix test is this
            try:
                for item in items:
                    if type(item) is not dict:
                        raise Slow
                    value = item[name]
                    if type(value) is not str:
                        raise Slow
                    if (value[part] == text) is affixed:  # a slice: startswith() parses its arguments per call
                        found += 1
                        if found == stop:
                            break
            except KeyError:
                raise Slow from None
            return found

        affix_field.tally = tally  # type: ignore[attr-defined]  # for item_tally
        return affix_field

    def affix(item: Any) -> bool:
        value = left(item)
        if type(value) is not str:
            raise Slow
        return (value.startswith(text) if prefix else value.endswith(text)) is not negated

    return affix


def _affix_slice(text: str, prefix: bool) -> slice:
    """The part of a text that is ``text`` exactly when the text starts (``prefix``) or ends with it: the
    first or last ``len(text)`` characters (none for an empty ``text``, which every text starts and ends with)."""
    size = len(text)
    return slice(0, size) if prefix or not size else slice(-size, None)


def _presence(name: str, missing: bool) -> ItemTest:
    def presence(item: Any) -> bool:
        if type(item) is not dict:
            raise Slow
        return (name not in item) is missing

    return presence
