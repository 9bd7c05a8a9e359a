"""How stateful facts reach a decision: the :class:`DecisionContext` protocol, and an in-memory implementation.

The engine owns no storage and calls no model. Counts, sums, sequences, spend, entity attributes and guardrail
scores come from the caller (the gateway) through this protocol. Any exception raised by a method, or ``None``
from :meth:`DecisionContext.resolve`, makes the condition that needed it *unevaluable*: a deny rule then matches
and an allow rule does not (fail closed), and the decision's ``errors`` say why.

History methods count only calls that were allowed (the gateway reserves a call atomically with its decision).
``actions`` are glob patterns (``fnmatch``: ``crm.*``); ``scope`` is one of :class:`Scope` and ``key`` the
principal id, agent id, session id or tenant of the current request for that scope. ``tenant`` is the request's
tenant (``None`` for none), and only that tenant's calls count: ids are often unique within a tenant only, so
two tenants' ``bob`` are two users with two histories and two budgets.
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Context, Decimal, Inexact, InvalidOperation, Overflow
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any, Protocol, runtime_checkable

from agentcore.policies.model import Request
from agentcore.policies.quantities import show


class Scope(StrEnum):
    """Whose calls a stateful rule counts."""

    USER = "user"
    AGENT = "agent"
    SESSION = "session"
    TENANT = "tenant"


def scope_key(request: Request, scope: Scope) -> str | None:
    """The key of ``request`` for ``scope`` (None when the request has none, e.g. no session id)."""
    if scope is Scope.USER:
        return request.principal.id
    if scope is Scope.AGENT:
        return request.agent.id
    if scope is Scope.SESSION:
        return request.context.session_id
    return request.context.tenant


def action_matches(action: str, patterns: Sequence[str]) -> bool:
    """True when ``action`` matches one of the glob ``patterns`` (``*`` alone matches every tool)."""
    return any(fnmatchcase(action, pattern) for pattern in patterns)


@runtime_checkable
class DecisionContext(Protocol):
    """Stateful facts for one decision. Implementations must be safe to call from several threads."""

    def resolve(self, entity: str, key: Any) -> Mapping[str, Any] | None:
        """Attributes of entity ``entity`` with id ``key`` (``order(order_id).status``), or None if unknown.

        A lookup keyed on several values (``flight(number, date).status``) passes them as a tuple; the
        registered loaders of :class:`CallHistoryContext` are called with one argument per value."""
        ...

    def count(
        self,
        actions: Sequence[str],
        scope: Scope,
        key: str,
        window_seconds: float,
        now: datetime,
        *,
        tenant: str | None,
    ) -> int:
        """Number of executed calls to ``actions`` by ``scope``/``key`` of ``tenant`` in ``(now - window, now]``."""
        ...

    def total(
        self,
        actions: Sequence[str],
        arg_path: Sequence[str],
        scope: Scope,
        key: str,
        window_seconds: float,
        now: datetime,
        *,
        tenant: str | None,
    ) -> float | Decimal:
        """Exact sum of the numeric argument at ``arg_path`` over executed calls (missing or null count as 0; raise
        for a value that is no finite number, so the sum fails closed): :func:`argument_total`."""
        ...

    def last_call(
        self, actions: Sequence[str], scope: Scope, key: str, now: datetime, *, tenant: str | None
    ) -> datetime | None:
        """Time of the latest executed call to ``actions`` by ``scope``/``key`` of ``tenant`` at or before ``now``."""
        ...

    def spend(self, scope: Scope, key: str, since: datetime, now: datetime, *, tenant: str | None) -> float:
        """Accelerator spend in USD of ``scope``/``key`` of ``tenant`` in ``[since, now]`` (from the accel ledger)."""
        ...

    def detect(self, detector: str, text: str) -> float:
        """Score in [0, 1] of guardrail detector ``detector`` on ``text``; raise if the detector is unavailable."""
        ...


def argument_total(calls_args: Iterable[Mapping[str, Any]], arg_path: Sequence[str]) -> int | Decimal:
    """The exact sum of the numbers at ``arg_path`` over calls' arguments (a float counts as the decimal it was
    written as, like the language's arithmetic: nine calls of 0.1 sum to 0.9, not 0.8999999999999999); a call
    without the value, or with null there, counts 0.

    Raises ``ValueError`` for a value that is no finite number (text, a boolean, a list, NaN): the sum cannot be
    known, so the condition reading it fails closed rather than counting that call as 0.
    """
    whole, fraction = 0, Decimal(0)
    for args in calls_args:
        value: Any = args
        for part in arg_path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            whole += int(value)
        elif isinstance(value, float) and math.isfinite(value):
            fraction = _EXACT.add(fraction, Decimal(repr(float(value))))
        else:
            raise ValueError(f"an earlier call's {'.'.join(arg_path)} is {show(value)}, not a finite number")
    return whole if not fraction else _EXACT.add(fraction, whole)


_EXACT = Context(prec=60, traps=[InvalidOperation, Overflow, Inexact])  # a sum it cannot hold exactly: an error


Resolver = Callable[[Any], Mapping[str, Any] | None]
Detector = Callable[[str], float]


class CallHistoryContext(ABC):
    """What every history-keeping :class:`DecisionContext` shares: entity loaders and detectors registered by
    name, and count / total / last call worked out from one listing of executed calls (:meth:`_window`).
    Subclasses say where the calls are kept and how spend is known."""

    resolver_hint = "add_resolver"  # how a user of the subclass registers one, for the error message
    detector_hint = "add_detector"

    def __init__(
        self, resolvers: Mapping[str, Resolver] | None = None, detectors: Mapping[str, Detector] | None = None
    ):
        self.resolvers: dict[str, Resolver] = dict(resolvers or {})
        self.detectors: dict[str, Detector] = dict(detectors or {})

    @abstractmethod
    def _window(
        self, actions: Sequence[str], scope: Scope, key: str, tenant: str | None, start: float, end: float
    ) -> list[tuple[float, Mapping[str, Any]]]:
        """(epoch seconds, arguments) of executed calls to ``actions`` by ``scope``/``key`` of ``tenant`` in
        ``(start, end]``."""

    def resolve(self, entity: str, key: Any) -> Mapping[str, Any] | None:
        loader = self.resolvers.get(entity)
        if loader is None:
            raise LookupError(f"no resolver registered for entity {entity!r}; register one with {self.resolver_hint}")
        return loader(*key) if isinstance(key, tuple) else loader(key)

    def count(
        self,
        actions: Sequence[str],
        scope: Scope,
        key: str,
        window_seconds: float,
        now: datetime,
        *,
        tenant: str | None,
    ) -> int:
        end = now.timestamp()
        return len(self._window(actions, scope, key, tenant, end - window_seconds, end))

    def total(
        self,
        actions: Sequence[str],
        arg_path: Sequence[str],
        scope: Scope,
        key: str,
        window_seconds: float,
        now: datetime,
        *,
        tenant: str | None,
    ) -> float | Decimal:
        end = now.timestamp()
        calls = self._window(actions, scope, key, tenant, end - window_seconds, end)
        return argument_total((args for _, args in calls), arg_path)

    def last_call(
        self, actions: Sequence[str], scope: Scope, key: str, now: datetime, *, tenant: str | None
    ) -> datetime | None:
        calls = self._window(actions, scope, key, tenant, 0.0, now.timestamp())
        latest = max((at for at, _ in calls), default=None)
        return None if latest is None else datetime.fromtimestamp(latest, tz=UTC)

    def detect(self, detector: str, text: str) -> float:
        function = self.detectors.get(detector)
        if function is None:
            raise LookupError(f"detector {detector!r} is not available; register it with {self.detector_hint}")
        return float(function(text))


@dataclass(frozen=True)
class _Call:
    action: str
    at: float  # epoch seconds
    keys: dict[Scope, str | None]
    args: dict[str, Any]


@dataclass(frozen=True)
class _Spend:
    scope: Scope
    key: str
    tenant: str | None
    usd: float
    at: datetime


class InMemoryContext(CallHistoryContext):
    """A complete :class:`DecisionContext` held in memory: for tests, examples and single-process use.

    Record executed calls with :meth:`record`, spend with :meth:`add_spend`; register entity loaders and
    detectors in the constructor or with :meth:`add_resolver` / :meth:`add_detector`.
    """

    def __init__(
        self, resolvers: Mapping[str, Resolver] | None = None, detectors: Mapping[str, Detector] | None = None
    ):
        super().__init__(resolvers, detectors)
        self._lock = threading.Lock()
        self._calls: list[_Call] = []
        self._spend: list[_Spend] = []

    def add_resolver(self, entity: str, loader: Resolver) -> None:
        self.resolvers[entity] = loader

    def add_detector(self, name: str, detector: Detector) -> None:
        self.detectors[name] = detector

    def record(self, request: Request, at: datetime | None = None) -> None:
        """Record that ``request`` was allowed and executed (at ``at``, default the request's time)."""
        call = _Call(
            action=request.action,
            at=(at or request.context.time).timestamp(),
            keys={scope: scope_key(request, scope) for scope in Scope},
            args=request.args,
        )
        with self._lock:
            self._calls.append(call)

    def add_spend(self, scope: Scope, key: str, usd: float, at: datetime, *, tenant: str | None = None) -> None:
        """Record ``usd`` spent by ``scope``/``key`` of ``tenant`` (for the tenant scope, ``key`` is the tenant)."""
        with self._lock:
            self._spend.append(_Spend(scope, key, key if scope is Scope.TENANT else tenant, usd, at))

    def _window(
        self, actions: Sequence[str], scope: Scope, key: str, tenant: str | None, start: float, end: float
    ) -> list[tuple[float, Mapping[str, Any]]]:
        with self._lock:
            calls = list(self._calls)
        return [
            (c.at, c.args)
            for c in calls
            if c.keys[scope] == key
            and c.keys[Scope.TENANT] == tenant
            and start < c.at <= end
            and action_matches(c.action, actions)
        ]

    def spend(self, scope: Scope, key: str, since: datetime, now: datetime, *, tenant: str | None) -> float:
        with self._lock:
            entries = list(self._spend)
        return sum(
            e.usd for e in entries if e.scope is scope and e.key == key and e.tenant == tenant and since <= e.at <= now
        )
