"""Compiling value expressions (argument paths, resolvers, aggregates, scores) into closures over an :class:`Env`.

A getter returns the value or raises :class:`Unevaluable` (:class:`Missing` for an absent path), which the
rule evaluation turns into a fail-closed outcome. Nothing here parses or walks the AST at decision time.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agentcore.policies import ast
from agentcore.policies.context import DecisionContext, Scope, scope_key
from agentcore.policies.hosts import host_of
from agentcore.policies.items import Slow, item_tally, item_total, item_value, whole_numbers
from agentcore.policies.model import MAX_ARG_DEPTH, Request, canonical
from agentcore.policies.quantities import (
    LIMIT,
    WEEKDAY_NAMES,
    Missing,
    Unevaluable,
    arithmetic,
    bounded,
    exact,
    moment,
    moments,
    numeric_total,
    ordered,
    show,
)
from agentcore.text import canonical_text

__all__ = ["Env", "Getter", "Missing", "Unevaluable", "compile_value"]


class Env:
    """Everything one decision reads: the request, the caller's context, a per-decision resolver memo and the
    items quantifiers are looking at (``bound``: variable name -> item).

    ``args`` and ``roles`` are the request's, read once: an attribute of a pydantic model is read through its
    ``__getattr__`` hook, several times slower than a slot, and most rules read one of them."""

    __slots__ = ("args", "bound", "context", "memo", "request", "roles", "trace")

    def __init__(self, request: Request, context: DecisionContext, trace: list[Any] | None = None) -> None:
        self.request = request
        self.args = request.args
        self.roles = request.principal.roles
        self.context = context
        self.memo: dict[tuple[str, Any], Any] = {}
        self.trace = trace
        self.bound: dict[str, Any] = {}


Getter = Callable[[Env], Any]
CondCompiler = Callable[[Any], Callable[[Env], bool]]  # compiles an ast.Cond (a conditions.Compiler)


def _fast_paths(cond: CondCompiler) -> bool:
    """May folds and counts take the fast paths of ``items``? Not for a trace, which records every item's atoms."""
    return not getattr(cond, "traced", False)


class ValueCompileError(ValueError):
    """A value that parses but cannot be compiled (an unknown time zone); carries the node's span."""

    def __init__(self, message: str, span: ast.Span | None, help: str = "") -> None:
        super().__init__(message)
        self.span = span
        self.help = help


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: Any, what: str) -> Any:
    """``value`` as an exact finite number (an int, or the decimal a float was written as), or raise."""
    return value if type(value) is int else exact(value, what)


def equality_key(value: Any) -> Any:
    """The language's equality as a hashable key: structural for objects (key order is irrelevant) and lists,
    numbers by exact value (``1`` equals ``1.0``, and the sum ``0.1 plus 0.2`` equals ``0.3``) but never equal to
    booleans, strings or null, at any depth; dates, timestamps and durations by value.
    """
    if value is None or isinstance(value, (bool, str)):
        return (type(value).__name__, value)
    if isinstance(value, (int, float, Decimal)):
        if value != value:
            raise Unevaluable("a value is NaN, which equals nothing")
        return ("number", Decimal(repr(value)) if type(value) is float else value)
    if isinstance(value, dict):
        return ("object", frozenset((key, equality_key(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(map(equality_key, value)))
    if isinstance(value, (date, time, timedelta)):
        return ("time", value)
    return ("other", repr(value))


_show = show


def describe(node: ast.Value) -> str:
    """A short human name of a value expression, for error messages."""
    if isinstance(node, ast.Path):
        return ".".join(((node.root,) if node.root != "args" else ()) + node.parts) or node.root
    if isinstance(node, ast.Resolve):
        keys = ", ".join(describe(key) for key in node.keys)
        return f"{node.entity}({keys})" + "".join(f".{a}" for a in node.attr)
    if isinstance(node, ast.Var):
        return ".".join((node.name, *node.parts))
    return node.kind


def walk(value: Any, parts: tuple[str, ...], what: str) -> Any:
    """Follow ``parts`` through nested objects and lists (numeric parts index lists)."""
    for part in parts:
        if isinstance(value, dict):
            if part not in value:
                raise Missing(f"{what} is missing")
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise Missing(f"{what} is missing")
    return value


def _no_conditions(cond: Any) -> Callable[[Env], bool]:
    raise ValueCompileError("a condition inside a value needs the condition compiler", cond.span)


def compile_value(node: ast.Value, cond: CondCompiler = _no_conditions) -> Getter:
    """Compile a value expression once into a closure; ``cond`` compiles conditions nested in it (``count of
    ... where``)."""
    compiler = _COMPILERS.get(type(node))
    if compiler is not None:
        return compiler(node)
    return _WITH_CONDITIONS[type(node)](node, cond)


def _literal(node: ast.Lit) -> Getter:
    value = canonical_text(node.value) if isinstance(node.value, str) else node.value
    return lambda env: value


def _path(node: ast.Path) -> Getter:
    parts, what = node.parts, describe(node)
    if node.root == "args":
        if len(parts) == 1:
            key = parts[0]

            def arg(env: Env) -> Any:
                try:
                    return env.args[key]
                except KeyError:
                    raise Missing(f"argument `{key}` is missing") from None

            arg.argument = key  # type: ignore[attr-defined]  # lets a condition read the argument itself
            return arg
        if len(parts) == 2:
            outer, inner = parts

            def nested(env: Env) -> Any:
                value = env.args.get(outer)
                if type(value) is dict and inner in value:
                    return value[inner]
                return walk(env.args, parts, f"argument `{what}`")

            return nested
        return lambda env: walk(env.args, parts, f"argument `{what}`")
    if node.root == "user":
        if not parts:
            return lambda env: env.request.principal
        if parts == ("id",):
            return lambda env: env.request.principal.id
        if parts == ("roles",):
            return lambda env: sorted(env.roles)
        return lambda env: walk(env.request.principal.attributes, parts, f"user attribute `{'.'.join(parts)}`")
    if node.root == "agent":
        if parts == ("id",):
            return lambda env: env.request.agent.id
        return lambda env: walk(env.request.agent.attributes, parts, f"agent attribute `{'.'.join(parts)}`")
    field = {"tenant": "tenant", "session": "session_id"}.get(parts[0] if parts else "")
    if node.root == "context" and parts == ("resource",):
        return lambda env: _present(env.request.resource, "the request's resource")
    if field is None or len(parts) != 1:
        raise ValueError(f"`{what}` is not a context value; use context.tenant, context.session or context.resource")
    return lambda env: _present(getattr(env.request.context, field), f"the request's {parts[0]}")


def _present(value: Any, what: str) -> Any:
    if value is None:
        raise Missing(f"{what} is missing")
    return value


def _resolve(node: ast.Resolve, cond: CondCompiler) -> Getter:
    entity, attr, what = node.entity, node.attr, describe(node)
    getters = [compile_value(key, cond) for key in node.keys]
    if len(getters) == 1:
        key_of = getters[0]
    else:

        def key_of(env: Env) -> Any:
            return tuple(get(env) for get in getters)  # several keys: the resolver is called with each

    def resolve(env: Env) -> Any:
        key = key_of(env)
        memo_key = (entity, json.dumps(key, sort_keys=True, default=str))
        if memo_key in env.memo:
            record = env.memo[memo_key]
        else:
            try:
                record = env.context.resolve(entity, key)
            except Exception as error:
                raise Unevaluable(f"resolver `{entity}` failed for {_show(key)}: {error}") from error
            if record is not None:  # its texts at any depth, as the arguments' and the policy's literals are
                try:
                    record = canonical(dict(record), 0, True)
                except ValueError:
                    deep = f"resolver `{entity}` returned a record nested deeper than {MAX_ARG_DEPTH} levels"
                    raise Unevaluable(deep) from None
            env.memo[memo_key] = record
        if record is None:
            raise Unevaluable(f"{entity} {_show(key)} was not found by its resolver")
        return walk(record, attr, what)

    return resolve


def _length(node: ast.Length, cond: CondCompiler) -> Getter:
    inner, what = compile_value(node.of, cond), describe(node.of)

    def length(env: Env) -> int:
        value = inner(env)
        if isinstance(value, (str, list, dict)):
            return len(value)
        raise Unevaluable(f"`{what}` is {_show(value)}, which has no length")

    return length


def _host(node: ast.Host, cond: CondCompiler) -> Getter:
    inner, what = compile_value(node.of, cond), describe(node.of)

    def host(env: Env) -> str:
        value = inner(env)
        if not isinstance(value, str):
            raise Unevaluable(f"`{what}` is {_show(value)}, not a URL")
        return host_of(value, f"`{what}`")

    return host


def argument_key(node: ast.Value) -> str | None:
    """The name of the argument ``node`` reads when it is a plain argument (``amount``), else None."""
    if isinstance(node, ast.Path) and node.root == "args" and len(node.parts) == 1:
        return node.parts[0]
    return None


Binary = Callable[[Any, Any], Any]


def _arguments(operands: tuple[ast.Value, ...], compute: Binary, general: Getter, values: Binary) -> Getter:
    """``general``, or when its two operands are plain arguments (``quantity times price``), a getter that reads
    them itself: whole numbers are computed here, other values by ``values(a, b)`` (``general`` without the
    reads), and a missing argument is left to ``general``, whose getters say which is missing."""
    keys = [key for key in map(argument_key, operands) if key is not None]
    if len(keys) != 2 or len(operands) != 2:
        return general
    first, second = keys

    def arguments(env: Env) -> Any:
        args = env.args
        a, b = args.get(first, _UNBOUND), args.get(second, _UNBOUND)
        if type(a) is int and type(b) is int:
            result = compute(a, b)
            if -LIMIT < result < LIMIT:
                return result
        if a is _UNBOUND or b is _UNBOUND:
            return general(env)
        return values(a, b)

    arguments.pair = (first, second, compute, values)  # type: ignore[attr-defined]  # for conditions' comparisons
    return arguments


def _plus(node: ast.Plus, cond: CondCompiler) -> Getter:
    first, *rest = [compile_value(t, cond) for t in node.terms]
    what = f"`{' plus '.join(describe(t) for t in node.terms)}`"

    def plus(env: Env) -> Any:
        total = first(env)
        for get in rest:
            term = get(env)
            if type(total) is int and type(term) is int and -LIMIT < total + term < LIMIT:
                total += term  # whole numbers, as ``arithmetic`` computes them, without the call
            else:
                total = arithmetic("plus", total, term, what)
        return total

    return _arguments(node.terms, operator.add, plus, lambda a, b: arithmetic("plus", a, b, what))


def _arith(node: ast.Arith, cond: CondCompiler) -> Getter:
    left, right, op = compile_value(node.left, cond), compile_value(node.right, cond), node.op
    what = f"`{describe(node.left)} {op} {describe(node.right)}`"
    if op == "divided":
        return lambda env: arithmetic(op, left(env), right(env), what)
    compute = {"plus": operator.add, "minus": operator.sub, "times": operator.mul}[op]

    def arith(env: Env) -> Any:
        """Whole numbers, the commonest operands, are computed here as ``arithmetic`` computes them."""
        a, b = left(env), right(env)
        if type(a) is int and type(b) is int:
            result = compute(a, b)
            if -LIMIT < result < LIMIT:
                return result
        return computed(a, b)

    def computed(a: Any, b: Any) -> Any:
        """ISO texts subtracted (``end_date minus start_date``: text starting with a year is a moment) straight
        to :func:`moments`; everything else by ``arithmetic``."""
        if op == "minus" and type(a) is str and type(b) is str and a[:4].isdigit():
            later, earlier = moments(a, b, what)
            return later - earlier  # type: ignore[operator]  # both dates or both timestamps
        return arithmetic(op, a, b, what)

    return _arguments((node.left, node.right), compute, arith, computed)


def _function(node: ast.Function, cond: CondCompiler) -> Getter:
    args, name = [compile_value(a, cond) for a in node.args], node.name
    what = f"the argument of `{name}`"
    if name == "abs":
        if len(args) != 1:
            raise ValueCompileError("`abs` takes one value", node.span, "write `abs(balance)`")
        only = args[0]
        return lambda env: abs(number(only(env), what))
    pick = min if name == "min" else max

    def extreme(env: Env) -> Any:
        values = [get(env) for get in args]
        first = values[0]
        return pick(values, key=lambda v: ordered(v, first, what)[0])

    return extreme


def listed(value: Any, what: str) -> list[Any]:
    """``value``, which a quantifier or fold ranges over, when it is a list."""
    if not isinstance(value, list):
        raise Unevaluable(f"`{what}` is {_show(value)}, not a list")
    return value


def items_of(node: ast.Value, cond: CondCompiler) -> Callable[[Env], list[Any]]:
    """The list a quantifier, count or fold ranges over (checked with :func:`listed`). An argument, the
    commonest, is read here: the getter of :func:`_path` and the check in one call."""
    what, key = describe(node), argument_key(node)
    if key is not None:

        def argument(env: Env) -> list[Any]:
            value = env.args.get(key, _UNBOUND)
            if type(value) is list:
                return value
            if value is _UNBOUND:
                raise Missing(f"argument `{key}` is missing")
            return listed(value, what)

        return argument
    over = compile_value(node, cond)

    def items(env: Env) -> list[Any]:
        value = over(env)
        return value if type(value) is list else listed(value, what)

    return items


def _fold(node: ast.Fold, cond: CondCompiler) -> Getter:
    items, value = items_of(node.over, cond), compile_value(node.value, cond)
    var, op, fast = node.var, node.op, item_value(node.value, node.var) if _fast_paths(cond) else None
    what = f"the {op} of `{describe(node.value)}`"
    whole = item_total(fast) if fast is not None and op == "sum" and whole_numbers(fast) else None
    key = argument_key(node.over)

    def fold(env: Env) -> Any:
        listed = env.args.get(key) if key is not None else None  # a list argument read here, as quantifiers do
        if type(listed) is not list:
            listed = items(env)
        if whole is not None:
            try:  # whole numbers summed without a list: ``numeric_total``'s result and error
                total = whole(listed)
            except Slow:
                pass
            else:
                return total if -LIMIT < total < LIMIT else bounded(total, what)
        values = _fast_values(fast, listed) if fast is not None else None
        if values is None:
            values = _each(env, var, listed, value)
        if op == "sum":
            return numeric_total(values, what)
        if not values:
            raise Unevaluable(f"{what} is undefined: the list is empty")
        first = values[0]
        return (min if op == "min" else max)(values, key=lambda v: ordered(v, first, what)[0])

    if whole is not None and key is not None:
        fold.whole_list = (key, whole)  # type: ignore[attr-defined]  # for conditions._ordered_const
    return fold


_UNBOUND = object()


def _fast_values(fast: Callable[[Any], Any], items: list[Any]) -> list[Any] | None:
    """The fast path's value of every item (iterated in C), or None when an item needs the general path."""
    try:
        return list(map(fast, items))
    except Slow:
        return None


def _each(env: Env, var: str, items: list[Any], get: Callable[[Env], Any]) -> list[Any]:
    """``get`` evaluated with ``var`` bound to each item in turn (the general path of folds and counts)."""
    bound, saved = env.bound, env.bound.get(var, _UNBOUND)
    try:
        values = []
        for item in items:
            bound[var] = item
            values.append(get(env))
        return values
    finally:
        if saved is _UNBOUND:
            bound.pop(var, None)
        else:
            bound[var] = saved


def _count_where(node: ast.CountWhere, cond: CondCompiler) -> Getter:
    items, test, var = items_of(node.over, cond), cond(node.cond), node.var
    tally = item_tally(node.cond, var) if _fast_paths(cond) else None
    key = argument_key(node.over)

    def count(env: Env) -> int:
        values = env.args.get(key) if key is not None else None  # a list argument read here, as quantifiers do
        if type(values) is not list:
            values = items(env)
        if tally is not None:
            try:
                return tally(values, True, 0)
            except Slow:
                pass
        return sum(map(bool, _each(env, var, values, test)))

    if tally is not None and key is not None:
        count.whole_list = (key, tally)  # type: ignore[attr-defined]  # for conditions._ordered_const
    return count


def bind_items(node: ast.Quantified, cond: CondCompiler) -> tuple[Callable[[Env], list[Any]], Callable[[Env], bool]]:
    """The list a quantifier ranges over (:func:`items_of`) and its condition, compiled (``conditions`` runs
    the loop)."""
    return items_of(node.over, cond), cond(node.cond)


def _var(node: ast.Var) -> Getter:
    name, parts, what = node.name, node.parts, describe(node)
    if len(parts) == 1:
        part = parts[0]

        def field(env: Env) -> Any:
            """``item.amount``, the commonest form: one field of an object."""
            item = env.bound.get(name, _UNBOUND)
            if type(item) is dict and part in item:
                return item[part]
            if item is _UNBOUND:
                raise Unevaluable(f"`{name}` is not bound here")
            return walk(item, parts, f"`{what}`")

        return field

    def var(env: Env) -> Any:
        try:
            item = env.bound[name]
        except KeyError:
            raise Unevaluable(f"`{name}` is not bound here") from None
        return walk(item, parts, f"`{what}`") if parts else item

    return var


def zone(name: str | None, span: ast.Span | None) -> ZoneInfo:
    """The IANA time zone ``name`` (UTC when None), or a compile error naming it."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder of zones ("Europe")
        raise ValueCompileError(f"unknown time zone {name!r}", span, 'use an IANA name like "Europe/Madrid"') from None


def _now(node: ast.Now) -> Getter:
    return lambda env: env.request.context.time


def _today(node: ast.Today) -> Getter:
    local = zone(node.tz, node.span)
    return lambda env: env.request.context.time.astimezone(local).date()


def _clock(node: ast.Clock) -> Getter:
    value = time.fromisoformat(node.text)
    return lambda env: value


def _duration(node: ast.Duration) -> Getter:
    value = timedelta(seconds=node.seconds)
    return lambda env: value


def _calendar(node: ast.Calendar, cond: CondCompiler) -> Getter:
    inner, local, part = compile_value(node.of, cond), zone(node.tz, node.span), node.part
    what = f"`{describe(node.of)}`"

    def calendar(env: Env) -> Any:
        when = moment(inner(env), what)
        if part == "weekday":
            day: date = when.astimezone(local).date() if isinstance(when, datetime) else when
            return WEEKDAY_NAMES[day.weekday()]
        if not isinstance(when, datetime):
            raise Unevaluable(f"{what} is a date, which has no time of day")
        return when.astimezone(local).time().replace(tzinfo=None)

    return calendar


def history_key(env: Env, scope: Scope) -> tuple[str, str | None]:
    """The request's key for ``scope`` and its tenant: whose history a stateful condition reads."""
    key = scope_key(env.request, scope)
    if key is None:
        raise Unevaluable(f"the request has no {scope.value} id, so per-{scope.value} history cannot be read")
    return key, env.request.context.tenant


def patterns(targets: ast.Targets) -> tuple[str, ...]:
    return targets.names or ("*",)


def _ask(what: str, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as error:
        raise Unevaluable(f"{what} is unavailable: {error}") from error


def _sum(node: ast.Sum) -> Getter:
    actions, arg, scope, seconds = patterns(node.actions), node.arg, Scope(node.scope), node.window.seconds
    what = f"the sum of {'.'.join(arg)}"

    def total(env: Env) -> int | Decimal:
        (key, tenant), now = history_key(env, scope), env.request.context.time
        return number(
            _ask(what, lambda: env.context.total(actions, arg, scope, key, seconds, now, tenant=tenant)), what
        )

    return total


def _count(node: ast.Count) -> Getter:
    actions, scope, seconds = patterns(node.actions), Scope(node.scope), node.window.seconds

    def count(env: Env) -> int:
        (key, tenant), now = history_key(env, scope), env.request.context.time
        return int(
            number(
                _ask("the call count", lambda: env.context.count(actions, scope, key, seconds, now, tenant=tenant)),
                "count",
            )
        )

    return count


def _spend(node: ast.Spend) -> Getter:
    scope, seconds = Scope(node.scope), node.window.seconds if node.window else None

    def spend(env: Env) -> float:
        (key, tenant), now = history_key(env, scope), env.request.context.time
        if seconds is None:
            since = datetime.combine(now.astimezone(UTC).date(), time(0), tzinfo=UTC)
        else:
            since = now - timedelta(seconds=seconds)
        return number(
            _ask("accelerator spend", lambda: env.context.spend(scope, key, since, now, tenant=tenant)), "spend"
        )

    return spend


def _score(node: ast.Score, cond: CondCompiler) -> Getter:
    detector = node.detector
    source = compile_value(node.source, cond) if node.source is not None else None

    def score(env: Env) -> float:
        if source is None:
            text = json.dumps(env.args, sort_keys=True, ensure_ascii=False, default=str)
        else:
            value = source(env)
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
        result = _ask(f"detector `{detector}`", lambda: env.context.detect(detector, text))
        return number(result, f"the score of detector `{detector}`")

    return score


_COMPILERS: dict[type, Callable[[Any], Getter]] = {
    ast.Lit: _literal,
    ast.Path: _path,
    ast.Sum: _sum,
    ast.Count: _count,
    ast.Spend: _spend,
    ast.Var: _var,
    ast.Now: _now,
    ast.Today: _today,
    ast.Clock: _clock,
    ast.Duration: _duration,
}
_WITH_CONDITIONS: dict[type, Callable[[Any, CondCompiler], Getter]] = {
    ast.Resolve: _resolve,
    ast.Length: _length,
    ast.Host: _host,
    ast.Plus: _plus,
    ast.Score: _score,
    ast.Arith: _arith,
    ast.Function: _function,
    ast.Fold: _fold,
    ast.CountWhere: _count_where,
    ast.Calendar: _calendar,
}
