"""Compiling conditions into closures ``Env -> bool`` with three-valued (Kleene) logic for unevaluable parts.

A test returns True/False or raises :class:`Unevaluable`. ``a or b`` is True if either side is True even when the
other cannot be evaluated; ``a and b`` is False if either side is False. Otherwise the error propagates to the
rule, which fails closed. With ``traced=True`` every atom records (text, outcome) in ``env.trace`` for `explain`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from agentcore.policies import ast
from agentcore.policies.context import Scope
from agentcore.policies.hosts import host_text
from agentcore.policies.items import Slow, item_tally
from agentcore.policies.quantities import LIMIT, MIDNIGHT, instant, moment, moments, ordered, same
from agentcore.policies.regex import compile_regex
from agentcore.policies.values import (
    Env,
    Getter,
    Missing,
    Unevaluable,
    argument_key,
    bind_items,
    compile_value,
    describe,
    equality_key,
    history_key,
    is_number,
    number,
    patterns,
    zone,
)
from agentcore.policies.values import ValueCompileError as CompileError
from agentcore.text import canonical_text

Test = Callable[[Env], bool]
from_date, from_timestamp, combine = date.fromisoformat, datetime.fromisoformat, datetime.combine
__all__ = ["CompileError", "Compiler", "Test"]


_ORDERED = ("gt", "ge", "lt", "le")
_TIMES = (date, time, timedelta)  # values ``is`` compares through ``quantities.same`` (datetime is a date)


def _ordered_const(op: str, left: Callable[[Env], Any], bound: Any, what: str, key: str | None) -> Test:
    """An ordered comparison against a number literal: the commonest condition, so it gets its own closures.
    ``key`` names the argument ``left`` reads, if it is a plain one."""
    if type(bound) is float:
        bound = number(bound, "the bound")
    general = _ordered_number(op, left, bound, what)
    compare = _ordered(op)
    pair = getattr(left, "pair", None)  # two plain arguments in arithmetic (values._arguments)
    if pair is not None:
        return _ordered_pair(compare, bound, pair, general)
    whole_list = getattr(left, "whole_list", None)  # a count or sum over a list argument with a fast path
    if whole_list is not None:
        return _ordered_list(compare, bound, whole_list, general)
    if key is None:
        return general

    def argument(env: Env) -> bool:
        """``amount is more than 5``: a whole-number argument read here (anything else as ``general``)."""
        value = env.args.get(key)
        return compare(value, bound) if type(value) is int else general(env)

    return argument


_Pair = tuple[str, str, Callable[[Any, Any], Any], Callable[[Any, Any], Any]]  # values._arguments' ``pair``


def _ordered_pair(compare: Callable[[Any, Any], bool], bound: Any, pair: _Pair, general: Test) -> Test:
    """``quantity times price is at most 700``: whole-number arguments read and computed here, as
    ``values._arguments`` computes them (anything else, an argument missing included, as ``general``)."""
    first, second, compute, _ = pair

    def ordered_pair(env: Env) -> bool:
        args = env.args
        a, b = args.get(first), args.get(second)
        if type(a) is int and type(b) is int:
            result = compute(a, b)
            if -LIMIT < result < LIMIT:
                return compare(result, bound)
        return general(env)

    return ordered_pair


def _ordered_list(
    compare: Callable[[Any, Any], bool], bound: Any, whole_list: tuple[str, Callable[[list[Any]], int]], general: Test
) -> Test:
    """``count of item in items where ... is more than 2``, ``sum of ... for item in items is more than 500``: the
    list argument read and its fast whole number computed here, as the getter (``values._count_where``,
    ``values._fold``) computes them; anything else (no list, an item the fast path cannot take, a sum beyond
    ``LIMIT``) as ``general``."""
    key, whole = whole_list

    def ordered_list(env: Env) -> bool:
        values = env.args.get(key)
        if type(values) is list:
            try:
                result = whole(values)
            except Slow:
                return general(env)
            if -LIMIT < result < LIMIT:
                return compare(result, bound)
        return general(env)

    return ordered_list


def _ordered_number(op: str, left: Callable[[Env], Any], bound: Any, what: str) -> Test:
    """Integers (the common case) skip the call to :func:`number`, which checks floats for NaN and infinity."""
    compare = _ordered(op)

    def ordered(env: Env) -> bool:
        value = left(env)
        return compare(value if type(value) is int else number(value, what), bound)

    if op == "gt":

        def gt(env: Env) -> bool:
            value = left(env)
            return (value if type(value) is int else number(value, what)) > bound

        return gt
    if op == "le":

        def le(env: Env) -> bool:
            value = left(env)
            return (value if type(value) is int else number(value, what)) <= bound

        return le
    return ordered


def _ordered(op: str) -> Callable[[Any, Any], bool]:
    """The comparison ``op``: the operator module's, which runs without a Python frame."""
    return _COMPARISONS[op]


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le,
}  # fmt: skip


class Compiler:
    """Compiles conditions of one bundle; ``source`` maps file paths to text so traces can quote atoms."""

    def __init__(
        self, source: dict[str, str], traced: bool = False, definitions: Mapping[str, ast.Definition] | None = None
    ) -> None:
        self._lines = {path: text.splitlines() for path, text in source.items()}
        self._traced = self.traced = traced  # values.compile_value reads ``traced``: a trace skips fast paths
        self._definitions = dict(definitions or {})
        self._named: dict[str, Test] = {}
        self._defining: list[str] = []

    def value(self, node: ast.Value) -> Getter:
        return compile_value(node, self)

    def __call__(self, node: ast.Cond) -> Test:
        """The compiler as the condition compiler of values (``count of ... where``)."""
        return self.cond(node)

    def cond(self, node: ast.Cond) -> Test:
        if isinstance(node, ast.Named):
            return self._named_cond(node)
        if isinstance(node, ast.Quantified):
            return self._quantified(node)
        if isinstance(node, ast.IfPresent):
            return _if_present(self.cond(node.item))
        if isinstance(node, ast.And):
            return _all([self.cond(item) for item in node.items])
        if isinstance(node, ast.Or):
            return _any([self.cond(item) for item in node.items])
        if isinstance(node, ast.Not):
            inner = self.cond(node.item)
            return lambda env: not inner(env)
        if isinstance(node, ast.Compare):
            test = self._compare(node)
        elif isinstance(node, ast.TimeWindow):
            test = self._time(node)
        else:
            test = self._after(node)
        return self._trace(node, test) if self._traced else test

    def _named_cond(self, node: ast.Named) -> Test:
        """A named condition compiles to its definition's test (once); cycles and unknown names are errors."""
        if node.name in self._named:
            return self._named[node.name]
        definition = self._definitions.get(node.name)
        if definition is None or node.name in self._defining:  # named.named_problems reports these first
            raise CompileError(f'the condition "{node.name}" is undefined or defined through itself', node.span)
        self._defining.append(node.name)
        try:
            test = self.cond(definition.cond)
        finally:
            self._defining.pop()
        self._named[node.name] = test
        return test

    def _quantified(self, node: ast.Quantified) -> Test:
        items, test = bind_items(node, self)
        tally = None if self._traced else item_tally(node.cond, node.var)  # a trace records every atom
        var, quantifier, key = node.var, node.quantifier, argument_key(node.over)
        wanted = quantifier == "every"  # every: look for a False; any/no: look for a True
        some = quantifier == "any"  # the result when an item is found

        def quantified(env: Env) -> bool:
            """Kleene over the items: ``any`` holds when one item holds even if another cannot be evaluated.
            A list argument is read here (``items`` is one call more; it also says why a value is no list)."""
            values = env.args.get(key) if key is not None else None
            if type(values) is not list:
                values = items(env)
            if tally is not None:
                try:  # the whole list on the fast path; one item it cannot take redoes it in full
                    return some if tally(values, not wanted, 1) else not some
                except Slow:
                    pass
            bound = env.bound
            saved, had = bound.get(var), var in bound
            error: Unevaluable | None = None
            try:
                for item in values:
                    bound[var] = item
                    try:
                        if test(env) is not wanted:
                            return some
                    except Unevaluable as caught:
                        error = error or caught
            finally:
                if had:
                    bound[var] = saved
                else:
                    bound.pop(var, None)
            if error is not None:
                raise error
            return not some

        return quantified

    def quote(self, span: ast.Span | None) -> str:
        if span is None or span.file not in self._lines:
            return ""
        lines = self._lines[span.file][span.line - 1 : span.end_line]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][span.column - 1 : span.end_column - 1]
        text = " ".join([lines[0][span.column - 1 :], *lines[1:-1], lines[-1][: span.end_column - 1]])
        return " ".join(text.split())  # like Rule.text: a condition written over several lines reads as one

    def _trace(self, node: ast.Cond, test: Test) -> Test:
        text = self.quote(node.span)

        def traced(env: Env) -> bool:
            try:
                result = test(env)
            except Unevaluable as error:
                if env.trace is not None:
                    env.trace.append((text, f"cannot evaluate: {error}"))
                raise
            if env.trace is not None:
                env.trace.append((text, result))
            return result

        return traced

    # ---- comparisons -------------------------------------------------------------------------------------------
    def _compare(self, node: ast.Compare) -> Test:
        if isinstance(node.left, ast.Host):
            node = _host_literals(node)
        op, left = node.op, self.value(node.left)
        what = f"`{describe(node.left)}`"
        path = _argument_path(node.left)
        if op in ("missing", "present"):
            return _presence(left, op == "missing", path)
        if op in ("has_role", "not_has_role"):
            return _has_role(str(_const(node.right[0])), op == "has_role")
        negated = op.startswith("not_") or op == "ne"
        positive = {"ne": "eq"}.get(op, op.removeprefix("not_"))
        if positive in _TEMPORAL:
            return self._temporal(positive, left, node, what)
        if positive == "matches":
            test = self._regex(left, node.right[0], what, node.span)
        elif positive == "one_of":
            test = _one_of(left, tuple(_const(v) for v in node.right))
        elif positive == "eq" and isinstance(node.right[0], ast.Lit) and isinstance(node.right[0].value, str):
            test = _eq_text(left, str(_const(node.right[0])), path)
        elif positive in ("starts_with", "ends_with") and _is_text(node.right[0]):
            return _affix(left, str(_const(node.right[0])), positive == "starts_with", negated, what, path)
        elif positive == "between":
            test = _between(left, self.value(node.right[0]), self.value(node.right[1]), what, node.right, path)
        elif positive in _ORDERED and isinstance(node.right[0], ast.Lit) and is_number(node.right[0].value):
            test = _ordered_const(positive, left, node.right[0].value, what, argument_key(node.left))
        elif positive in _ORDERED and isinstance(node.right[0], ast.Duration):
            test = _ordered_duration(positive, left, timedelta(seconds=node.right[0].seconds), what)
        else:
            test = _binary(positive, left, self.value(node.right[0]), what)
        return _negate(test) if negated else test

    def _temporal(self, op: str, left: Getter, node: ast.Compare, what: str) -> Test:
        """``is before`` / ``is after`` / ``is within D before|after|of T``: dates and timestamps only."""
        if op in ("before", "later"):
            other = self.value(node.right[0])
            if op == "before":
                return lambda env: _moments(left(env), other(env), what, lambda a, b: a < b)
            return lambda env: _moments(left(env), other(env), what, lambda a, b: a > b)
        fast = _within_now(op, left, node.right, what)
        if fast is not None:
            return fast
        span, anchor = self.value(node.right[0]), self.value(node.right[1])

        def within(env: Env) -> bool:
            length = span(env)
            if not isinstance(length, timedelta):
                raise Unevaluable(f"`{describe(node.right[0])}` is not a duration (write e.g. `24 hours`)")
            value, reference = moments(left(env), anchor(env), what)
            delta = reference - value  # type: ignore[operator]
            if op == "within_before":
                return bool(timedelta(0) <= delta <= length)
            if op == "within_after":
                return bool(-length <= delta <= timedelta(0))
            return bool(abs(delta) <= length)

        return within

    def _regex(self, left: Callable[[Env], Any], pattern_node: ast.Value, what: str, span: ast.Span | None) -> Test:
        pattern = canonical_text(str(_const(pattern_node)))
        try:
            regex = compile_regex(pattern)
        except ValueError as error:
            raise CompileError(f"invalid regular expression {pattern!r}: {error}", pattern_node.span or span) from None

        def matches(env: Env) -> bool:
            value = left(env)
            if not isinstance(value, str):
                raise Unevaluable(f"{what} is not text, so it cannot match a pattern")
            return regex.search(value) is not None

        return matches

    # ---- time and sequence -------------------------------------------------------------------------------------
    def _time(self, node: ast.TimeWindow) -> Test:
        local_zone = zone(node.tz, node.span)
        start, end = (int(t[:2]) * 60 + int(t[3:]) for t in (node.start, node.end))
        days, outside = frozenset(node.days or range(7)), node.outside

        def window(env: Env) -> bool:
            local = env.request.context.time.astimezone(local_zone)
            minute = local.hour * 60 + local.minute
            in_hours = start <= minute < end if start <= end else (minute >= start or minute < end)
            inside = in_hours and local.weekday() in days
            return not inside if outside else inside

        return window

    def _after(self, node: ast.After) -> Test:
        actions, scope, within = patterns(node.actions), Scope(node.scope), timedelta(seconds=node.within.seconds)

        def after(env: Env) -> bool:
            (key, tenant), now = history_key(env, scope), env.request.context.time
            try:
                last = env.context.last_call(actions, scope, key, now, tenant=tenant)
            except Exception as error:
                raise Unevaluable(f"call history is unavailable: {error}") from error
            return last is not None and now - last <= within

        return after


def _within_now(op: str, left: Getter, right: tuple[ast.Value, ...], what: str) -> Test | None:
    """``is within 48 hours before|after|of now``, the commonest window, or None for another form: the bounds on
    ``now - value`` are fixed when the rule compiles, and ``now`` (the request's aware time) needs no conversion."""
    if not (isinstance(right[0], ast.Duration) and isinstance(right[1], ast.Now)):
        return None
    length = timedelta(seconds=right[0].seconds)
    low, high = {"within_before": (timedelta(0), length), "within_after": (-length, timedelta(0))}.get(
        op, (-length, length)
    )

    key = getattr(left, "argument", None)  # a plain argument (values._path) is read here

    def within_now(env: Env) -> bool:
        text = env.args.get(key) if key is not None else None
        if type(text) is str and len(text) > 10:  # a timestamp's text, parsed here as ``moment`` parses it
            try:
                stamp = from_timestamp(text)
            except ValueError:
                pass
            else:
                if stamp.tzinfo is not None:
                    return low <= env.request.context.time - stamp <= high
        value = moment(text if type(text) is str else left(env), what)
        if type(value) is not datetime:
            value = instant(value)
        return low <= env.request.context.time - value <= high

    return within_now


def _ordered_duration(op: str, left: Getter, bound: timedelta, what: str) -> Test:
    """An ordered comparison with a duration literal (``end_date minus start_date is more than 30 days``)."""
    compare = _ordered(op)

    def ordered_duration(env: Env) -> bool:
        value = left(env)
        return compare(value, bound) if type(value) is timedelta else compare(*ordered(value, bound, what))

    pair: _Pair | None = getattr(left, "pair", None)  # two plain arguments in arithmetic (values._arguments)
    if pair is None:
        return ordered_duration
    first, second, compute, values = pair
    minus = compute is operator.sub

    def texts_apart(env: Env) -> bool:
        """``end_date minus start_date is more than 30 days``: two texts read here. A date's or an aware
        timestamp's text is parsed here as :func:`moment` parses it, and the two subtracted as ``moments``
        subtracts them (a date is its midnight UTC beside a timestamp); anything else is computed by the
        getter's own ``values``, as it computes two present arguments that are not whole numbers."""
        args = env.args
        a, b = args.get(first), args.get(second)
        if type(a) is not str or type(b) is not str:
            return ordered_duration(env)
        if minus:
            x: Any
            y: Any
            try:
                x = from_date(a) if len(a) == 10 and a[4] == "-" == a[7] else from_timestamp(a)
                y = from_date(b) if len(b) == 10 and b[4] == "-" == b[7] else from_timestamp(b)
            except ValueError:
                pass
            else:
                timed_x, timed_y = type(x) is datetime, type(y) is datetime
                naive = (timed_x and x.tzinfo is None) or (timed_y and y.tzinfo is None)  # as ``values`` reads it
                if not naive:
                    if timed_x is not timed_y:  # a date beside a timestamp is its midnight UTC
                        if timed_x:
                            y = combine(y, MIDNIGHT, UTC)
                        else:
                            x = combine(x, MIDNIGHT, UTC)
                    return compare(x - y, bound)
        value = values(a, b)
        return compare(value, bound) if type(value) is timedelta else compare(*ordered(value, bound, what))

    return texts_apart


_Path = tuple[str, str | None]  # an argument path of one or two names: (outer, inner or None)


def _argument_path(node: ast.Value) -> _Path | None:
    """The names of a plain (``amount``) or two-level (``customer.status``) argument path, else None: the paths
    conditions read from the request themselves."""
    if isinstance(node, ast.Path) and node.root == "args" and 1 <= len(node.parts) <= 2:
        return node.parts[0], node.parts[1] if len(node.parts) == 2 else None
    return None


def _host_literals(node: ast.Compare) -> ast.Compare:
    """``url host is "Evil.COM."``: text literals spelt as :func:`~agentcore.policies.hosts.host_of` spells hosts,
    whole for ``is`` and ``is one of``, as a part of one for ``starts/ends with`` and ``contains``."""
    if node.op in ("matches", "not_matches"):
        return node  # a pattern is matched against the host's spelling as it is written
    whole = node.op in ("eq", "ne", "one_of", "not_one_of")
    right = tuple(
        item.model_copy(update={"value": host_text(canonical_text(item.value), whole)})
        if isinstance(item, ast.Lit) and isinstance(item.value, str)
        else item
        for item in node.right
    )
    return node.model_copy(update={"right": right})


def _const(node: ast.Value) -> Any:
    if not isinstance(node, ast.Lit):
        raise CompileError("expected a literal value here", node.span)
    return canonical_text(node.value) if isinstance(node.value, str) else node.value


def _has_role(role: str, present: bool) -> Test:
    test = (lambda env: role in env.roles) if present else (lambda env: role not in env.roles)
    test.role = (role, present)  # type: ignore[attr-defined]  # lets _both inline it
    return test


def _is_text(node: ast.Value) -> bool:
    return isinstance(node, ast.Lit) and isinstance(node.value, str)


def _affix(
    left: Callable[[Env], Any], text: str, prefix: bool, negated: bool, what: str, path: _Path | None = None
) -> Test:
    """``starts with`` / ``ends with`` a text literal, negation folded in (one closure, no wrapper); a text at a
    plain or two-level argument path is read here (anything else as ``affix``)."""

    def affix(env: Env) -> bool:
        value = left(env)
        if type(value) is not str:
            raise Unevaluable(f"{what} is not text, so `{'starts' if prefix else 'ends'} with` does not apply")
        return (value.startswith(text) if prefix else value.endswith(text)) is not negated

    if path is None:
        return affix
    outer, inner = path

    def affix_argument(env: Env) -> bool:
        value = env.args.get(outer)
        if inner is not None:
            value = value.get(inner) if type(value) is dict else None
        if type(value) is not str:
            return affix(env)
        return (value.startswith(text) if prefix else value.endswith(text)) is not negated

    return affix_argument


def _eq_text(left: Callable[[Env], Any], text: str, path: _Path | None = None) -> Test:
    """Equality with a text literal, the commonest test: a string is compared here, any other value as the
    general equality (:func:`equal`) compares it: a date or a timestamp equals its ISO text, and a NaN (at any
    depth) cannot be evaluated. A text at a plain or two-level argument path is read here (anything else, a
    missing path included, as ``eq_text``)."""

    def eq_text(env: Env) -> bool:
        value = left(env)
        if type(value) is str:
            return value == text
        return equal(value, text)

    if path is None:
        return eq_text
    outer, inner = path
    if inner is None:

        def eq_argument(env: Env) -> bool:
            value = env.args.get(outer)
            return value == text if type(value) is str else eq_text(env)

        return eq_argument

    def eq_nested(env: Env) -> bool:
        value = env.args.get(outer)
        value = value.get(inner) if type(value) is dict else None
        return value == text if type(value) is str else eq_text(env)

    return eq_nested


def _one_of(left: Callable[[Env], Any], literals: tuple[Any, ...]) -> Test:
    """``is one of``: ``is`` with any of the literals (a date or a timestamp equals its ISO text, as with ``is``)."""
    keys = frozenset(map(equality_key, literals))

    def one_of(env: Env) -> bool:
        value = left(env)
        if isinstance(value, _TIMES):
            return any(equal(value, literal) for literal in literals)
        return equality_key(value) in keys

    return one_of


def _between(
    left: Callable[[Env], Any],
    low: Callable[[Env], Any],
    high: Callable[[Env], Any],
    what: str,
    bounds: tuple[ast.Value, ...] = (),
    path: _Path | None = None,
) -> Test:
    """``is between`` (both bounds included). Between two whole-number literals a whole-number plain argument is
    read and compared here (anything else as ``between``, which reads the value once)."""

    def between(env: Env) -> bool:
        value = left(env)
        lower, value_low = ordered(low(env), value, "the lower bound")
        value_high, upper = ordered(value, high(env), what)
        return bool(lower <= value_low and value_high <= upper)

    literals = [b.value for b in bounds if isinstance(b, ast.Lit) and type(b.value) is int]
    if len(literals) != 2 or path is None or path[1] is not None:
        return between
    first, last = literals
    key = path[0]

    def between_whole(env: Env) -> bool:
        value = env.args.get(key)
        return first <= value <= last if type(value) is int else between(env)

    return between_whole


_TEMPORAL = frozenset({"before", "later", "within_before", "within_after", "within_of"})


def _moments(left: Any, right: Any, what: str, compare: Callable[[Any, Any], bool]) -> bool:
    """``is before`` / ``is after``: dates, timestamps or times of day (never plain numbers)."""
    if isinstance(left, time) or isinstance(right, time):
        a, b = ordered(left, right, what)
    else:
        a, b = moments(left, right, what)
    return compare(a, b)


def _if_present(test: Test) -> Test:
    """The condition, false instead of unevaluable when a path it reads is absent (``... if present``)."""

    def if_present(env: Env) -> bool:
        try:
            return test(env)
        except Missing:
            return False

    return if_present


def _negate(test: Test) -> Test:
    return lambda env: not test(env)


def _presence(get: Callable[[Env], Any], missing: bool, path: _Path | None = None) -> Test:
    """``is missing`` / ``is present``. At a plain or two-level argument path the arguments are looked at here,
    so an absent argument (the usual reason to write the test) raises no :class:`Missing` to catch."""

    def presence(env: Env) -> bool:
        try:
            get(env)
        except Missing:
            return missing
        return not missing

    if path is None:
        return presence
    outer, inner = path
    if inner is None:
        if missing:
            return lambda env: outer not in env.args
        present = lambda env: outer in env.args  # noqa: E731
        present.present = outer  # type: ignore[attr-defined]  # lets _both inline it
        return present

    def argument_presence(env: Env) -> bool:
        value = env.args.get(outer)
        if type(value) is dict and inner in value:
            return not missing
        return missing if outer not in env.args else presence(env)

    return argument_presence


def _binary(op: str, left: Callable[[Env], Any], right: Callable[[Env], Any], what: str) -> Test:
    if op == "eq":
        return lambda env: equal(left(env), right(env))
    if op in ("gt", "ge", "lt", "le"):
        compare = _ordered(op)
        return lambda env: compare(*ordered(left(env), right(env), what))

    def text_test(env: Env) -> bool:
        value, operand = left(env), right(env)
        if op == "contains" and isinstance(value, list):
            if isinstance(operand, _TIMES) or any(isinstance(item, _TIMES) for item in value):
                return any(equal(item, operand) for item in value)  # as ``is`` compares them
            key = equality_key(operand)
            return any(equality_key(item) == key for item in value)
        if not isinstance(value, str) or not isinstance(operand, str):
            raise Unevaluable(f"{what} is not text, so `{op.replace('_', ' ')}` does not apply")
        if op == "contains":
            return operand in value
        return value.startswith(operand) if op == "starts_with" else value.endswith(operand)

    return text_test


def equal(a: Any, b: Any) -> bool:
    """The language's ``is``: a date, timestamp, duration or time of day equals one of its kind or its ISO text;
    anything else by :func:`equality_key` (structural, exact numbers; a NaN cannot be evaluated)."""
    timed = same(a, b)
    return equality_key(a) == equality_key(b) if timed is None else timed


def _all(tests: Sequence[Test]) -> Test:
    if len(tests) == 2:
        return _both(*tests)

    def every(env: Env) -> bool:
        error: Unevaluable | None = None
        for test in tests:
            try:
                if not test(env):
                    return False
            except Unevaluable as caught:
                error = error or caught
        if error is not None:
            raise error
        return True

    return every


def _both(first: Test, second: Test) -> Test:
    """``first and second`` with Kleene logic, unrolled for the common two-part rule. A part that only looks for
    a role or an argument name (it never raises) is inlined: ``x is present and ...``, ``user has role ...``."""
    present, head, tail = getattr(first, "present", None), getattr(first, "role", None), getattr(second, "role", None)
    if present is not None:
        return lambda env: present in env.args and second(env)
    if head is not None and head[1]:
        role = head[0]
        return lambda env: role in env.roles and second(env)
    if tail is not None:
        name, holds = tail

        def then_role(env: Env) -> bool:
            try:
                if not first(env):
                    return False
            except Unevaluable:
                if (name in env.roles) is not holds:
                    return False
                raise
            return (name in env.roles) is holds

        return then_role

    def both(env: Env) -> bool:
        """When neither part is false and both fail, the first error is the reason, as :func:`_all` gives it."""
        try:
            if not first(env):
                return False
        except Unevaluable as failed:
            try:
                holds = second(env)
            except Unevaluable:
                raise failed from None
            if not holds:
                return False
            raise
        return second(env)

    return both


def _any(tests: Sequence[Test]) -> Test:
    if len(tests) == 2:
        return _either(*tests)

    def some(env: Env) -> bool:
        error: Unevaluable | None = None
        for test in tests:
            try:
                if test(env):
                    return True
            except Unevaluable as caught:
                error = error or caught
        if error is not None:
            raise error
        return False

    return some


def _either(first: Test, second: Test) -> Test:
    """``first or second`` with Kleene logic, unrolled; when neither holds, the first error is the reason, as
    :func:`_any` gives it."""

    def either(env: Env) -> bool:
        try:
            if first(env):
                return True
        except Unevaluable as error:
            failed = error
        else:
            return second(env)
        try:
            holds = second(env)
        except Unevaluable:
            raise failed from None
        if holds:
            return True
        raise failed

    return either
