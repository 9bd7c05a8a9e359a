"""Compiling value expressions (argument paths, resolvers, aggregates, scores) into closures over an :class:`Env`.

A getter returns the value or raises :class:`Unevaluable` (:class:`Missing` for an absent path), which the
rule evaluation turns into a fail-closed outcome. Nothing here parses or walks the AST at decision time.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from agentcore.policies import ast
from agentcore.policies.context import DecisionContext, Scope, scope_key
from agentcore.policies.model import Request


class Unevaluable(Exception):
    """A condition could not be evaluated (missing attribute, wrong type, resolver or detector failure)."""


class Missing(Unevaluable):
    """An argument or attribute path is absent."""


class Env:
    """Everything one decision reads: the request, the caller's context and a per-decision resolver memo."""

    __slots__ = ("context", "memo", "request", "trace")

    def __init__(self, request: Request, context: DecisionContext, trace: list[Any] | None = None) -> None:
        self.request = request
        self.context = context
        self.memo: dict[tuple[str, Any], Any] = {}
        self.trace = trace


Getter = Callable[[Env], Any]


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: Any, what: str) -> float | int:
    """``value`` as a finite number, or raise :class:`Unevaluable`."""
    kind = type(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return value
    if not is_number(value):
        raise Unevaluable(f"{what} is {_show(value)}, not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise Unevaluable(f"{what} is {value}, not a finite number")
    return value


def equality_key(value: Any) -> Any:
    """The language's equality as a hashable key: structural for objects (key order is irrelevant) and lists,
    numbers by value (``1`` equals ``1.0``) but never equal to booleans, strings or null, at any depth.
    """
    if value is None or isinstance(value, (bool, str)):
        return (type(value).__name__, value)
    if isinstance(value, (int, float, Decimal)):
        if value != value:
            raise Unevaluable("a value is NaN, which equals nothing")
        return ("number", value)
    if isinstance(value, dict):
        return ("object", frozenset((key, equality_key(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(map(equality_key, value)))
    return ("other", repr(value))


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def describe(node: ast.Value) -> str:
    """A short human name of a value expression, for error messages."""
    if isinstance(node, ast.Path):
        return ".".join(((node.root,) if node.root != "args" else ()) + node.parts) or node.root
    if isinstance(node, ast.Resolve):
        return f"{node.entity}({describe(node.key)})" + "".join(f".{a}" for a in node.attr)
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


def compile_value(node: ast.Value) -> Getter:
    """Compile a value expression once into a closure."""
    compiler = _COMPILERS[type(node)]
    return compiler(node)


def _literal(node: ast.Lit) -> Getter:
    value = unicodedata.normalize("NFKC", node.value) if isinstance(node.value, str) else node.value
    return lambda env: value


def _path(node: ast.Path) -> Getter:
    parts, what = node.parts, describe(node)
    if node.root == "args":
        if len(parts) == 1:
            key = parts[0]

            def arg(env: Env) -> Any:
                args = env.request.args
                if key in args:
                    return args[key]
                raise Missing(f"argument `{key}` is missing")

            return arg
        if len(parts) == 2:
            outer, inner = parts

            def nested(env: Env) -> Any:
                value = env.request.args.get(outer)
                if type(value) is dict and inner in value:
                    return value[inner]
                return walk(env.request.args, parts, f"argument `{what}`")

            return nested
        return lambda env: walk(env.request.args, parts, f"argument `{what}`")
    if node.root == "user":
        if not parts:
            return lambda env: env.request.principal
        if parts == ("id",):
            return lambda env: env.request.principal.id
        if parts == ("roles",):
            return lambda env: sorted(env.request.principal.roles)
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


def _resolve(node: ast.Resolve) -> Getter:
    key_of, entity, attr, what = compile_value(node.key), node.entity, node.attr, describe(node)

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
            env.memo[memo_key] = record
        if record is None:
            raise Unevaluable(f"{entity} {_show(key)} was not found by its resolver")
        value = walk(dict(record), attr, what)
        return unicodedata.normalize("NFKC", value) if isinstance(value, str) else value

    return resolve


def _length(node: ast.Length) -> Getter:
    inner, what = compile_value(node.of), describe(node.of)

    def length(env: Env) -> int:
        value = inner(env)
        if isinstance(value, (str, list, dict)):
            return len(value)
        raise Unevaluable(f"`{what}` is {_show(value)}, which has no length")

    return length


def _host(node: ast.Host) -> Getter:
    inner, what = compile_value(node.of), describe(node.of)

    def host(env: Env) -> str:
        value = inner(env)
        if not isinstance(value, str):
            raise Unevaluable(f"`{what}` is {_show(value)}, not a URL")
        try:
            name = urlsplit(value).hostname
        except ValueError as error:
            raise Unevaluable(f"`{what}` is not a valid URL: {error}") from error
        if not name:
            raise Unevaluable(f"`{what}` ({_show(value)}) has no host")
        return name

    return host


def _plus(node: ast.Plus) -> Getter:
    terms = [(compile_value(t), describe(t)) for t in node.terms]
    return lambda env: sum(number(get(env), f"`{what}`") for get, what in terms)


def history_key(env: Env, scope: Scope) -> str:
    key = scope_key(env.request, scope)
    if key is None:
        raise Unevaluable(f"the request has no {scope.value} id, so per-{scope.value} history cannot be read")
    return key


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

    def total(env: Env) -> float:
        key, now = history_key(env, scope), env.request.context.time
        return number(_ask(what, lambda: env.context.total(actions, arg, scope, key, seconds, now)), what)

    return total


def _count(node: ast.Count) -> Getter:
    actions, scope, seconds = patterns(node.actions), Scope(node.scope), node.window.seconds

    def count(env: Env) -> int:
        key, now = history_key(env, scope), env.request.context.time
        return int(
            number(_ask("the call count", lambda: env.context.count(actions, scope, key, seconds, now)), "count")
        )

    return count


def _spend(node: ast.Spend) -> Getter:
    scope, seconds = Scope(node.scope), node.window.seconds if node.window else None

    def spend(env: Env) -> float:
        key, now = history_key(env, scope), env.request.context.time
        if seconds is None:
            since = datetime.combine(now.astimezone(UTC).date(), time(0), tzinfo=UTC)
        else:
            since = now - timedelta(seconds=seconds)
        return number(_ask("accelerator spend", lambda: env.context.spend(scope, key, since, now)), "spend")

    return spend


def _score(node: ast.Score) -> Getter:
    detector = node.detector
    source = compile_value(node.source) if node.source is not None else None

    def score(env: Env) -> float:
        if source is None:
            text = json.dumps(env.request.args, sort_keys=True, ensure_ascii=False, default=str)
        else:
            value = source(env)
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
        result = _ask(f"detector `{detector}`", lambda: env.context.detect(detector, text))
        return number(result, f"the score of detector `{detector}`")

    return score


_COMPILERS: dict[type, Callable[[Any], Getter]] = {
    ast.Lit: _literal,
    ast.Path: _path,
    ast.Resolve: _resolve,
    ast.Length: _length,
    ast.Host: _host,
    ast.Plus: _plus,
    ast.Sum: _sum,
    ast.Count: _count,
    ast.Spend: _spend,
    ast.Score: _score,
}
