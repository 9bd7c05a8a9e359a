"""The gateway's DecisionContext: call history from the state store, resolvers, detectors and spend.

The policy engine asks; this answers from persisted state so that every gateway process sees the same history.
Missing resolvers/detectors/ledger raise, which the engine turns into fail-closed decisions; so does a resolver
that misses its deadline. A call under a stateful bundle is decided twice: once outside the state lock (resolvers
and detectors run there, and are remembered), then again inside it over the locked history, reusing what they
returned.
"""

from __future__ import annotations

import concurrent.futures
import copy
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from agentcore.gateway.state import StateStore, StateView
from agentcore.policies.context import CallHistoryContext, Scope, action_matches
from agentcore.policies.values import Unevaluable

SpendSource = Callable[[Scope, str, str | None, datetime, datetime], float]  # scope, key, tenant, since, now


def ledger_spend(ledger: Any) -> SpendSource:
    """Budget rules read an :class:`agentcore.accel.ledger.Ledger`: USD of a user/agent/tenant in ``[since, now]``.

    A request with a tenant counts its tenant's receipts only (the gateway files its own untenanted spend under
    ``NO_TENANT``, so a tenant named "default" never counts it); one without counts the key's receipts in every
    tenant, which can only overstate spend: an ``Accelerator`` charges spend of unnamed tenants to "default"."""

    def spend(scope: Scope, key: str, tenant: str | None, since: datetime, now: datetime) -> float:
        if scope is Scope.SESSION:
            raise LookupError("the accelerator ledger keeps spend per user, agent and tenant, not per session")
        owner = {"tenant": tenant, scope.value: key}  # the tenant scope's key is the tenant itself
        return float(ledger.spend(**owner, window=now - since, now=now).usd)

    return spend


class GatewayContext(CallHistoryContext):
    """A thread-safe :class:`~agentcore.policies.context.DecisionContext` over a :class:`StateStore`."""

    resolver_hint = "@gateway.resolver"
    detector_hint = "@gateway.detector"

    def __init__(self, store: StateStore, resolver_timeout_s: float = 5.0) -> None:
        super().__init__()
        self.store = store
        self.spend_source: SpendSource | None = None
        self.resolver_timeout_s = resolver_timeout_s
        # A resolver that hangs keeps its thread (Python cannot stop one); once every thread hangs, further
        # lookups wait in the queue, miss their deadline and fail closed too.
        self._resolvers = concurrent.futures.ThreadPoolExecutor(32, thread_name_prefix="agentcore-resolver")
        self._history: StateStore | StateView = store
        self._memo: dict[tuple[str, str, str], Any] | None = None

    def for_call(self) -> GatewayContext:
        """A context for one call that remembers what resolvers and detectors returned."""
        call = copy.copy(self)
        call._memo = {}
        return call

    def over(self, view: StateView) -> GatewayContext:
        """The same call's context reading the history inside an atomic section."""
        bound = copy.copy(self)
        bound._history = view
        return bound

    def resolve(self, entity: str, key: Any) -> Mapping[str, Any] | None:
        found: Mapping[str, Any] | None = self._remembered("resolve", entity, key, self._resolve_in_time)
        return found

    def detect(self, detector: str, text: str) -> float:
        return float(self._remembered("detect", detector, text, super().detect))

    def _remembered(self, kind: str, name: str, key: Any, compute: Callable[[str, Any], Any]) -> Any:
        if self._memo is None:
            return compute(name, key)
        slot = (kind, name, repr(key))
        if slot not in self._memo:
            self._memo[slot] = compute(name, key)
        return self._memo[slot]

    def _resolve_in_time(self, entity: str, key: Any) -> Mapping[str, Any] | None:
        """The resolver's answer within ``resolver_timeout_s``; later than that the condition is unevaluable."""
        lookup = self._resolvers.submit(super().resolve, entity, key)
        try:
            return lookup.result(timeout=self.resolver_timeout_s)
        except concurrent.futures.TimeoutError:
            lookup.cancel()
            raise Unevaluable(
                f"resolver {entity!r} did not answer within {self.resolver_timeout_s:g}s (resolver_timeout_s)"
            ) from None

    def close(self) -> None:
        self._resolvers.shutdown(wait=False, cancel_futures=True)

    def _window(
        self, actions: Sequence[str], scope: Scope, key: str, tenant: str | None, start: float, end: float
    ) -> list[tuple[float, Mapping[str, Any]]]:
        return [
            (c.ts, c.args)
            for c in self._history.calls(scope, key, start, tenant=tenant)
            if c.ts <= end and action_matches(c.tool, actions)
        ]

    def spend(self, scope: Scope, key: str, since: datetime, now: datetime, *, tenant: str | None) -> float:
        if self.spend_source is None:
            raise LookupError("no accelerator ledger is connected to this gateway; set gateway.context.spend_source")
        return float(self.spend_source(scope, key, tenant, since, now))
