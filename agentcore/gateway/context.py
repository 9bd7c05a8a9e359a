"""The gateway's DecisionContext: call history from the state store, resolvers, detectors and spend.

The policy engine asks; this answers from persisted state so that every gateway process sees the same history.
Missing resolvers/detectors/ledger raise, which the engine turns into fail-closed decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from agentcore.gateway.state import CallRecord, StateStore
from agentcore.policies.context import Scope, action_matches, argument_total

Resolver = Callable[[Any], Mapping[str, Any] | None]
Detector = Callable[[str], float]
SpendSource = Callable[[Scope, str, datetime, datetime], float]


def ledger_spend(ledger: Any) -> SpendSource:
    """Budget rules read an :class:`agentcore.accel.ledger.Ledger`: USD of a user/agent/tenant in ``[since, now]``."""

    def spend(scope: Scope, key: str, since: datetime, now: datetime) -> float:
        if scope is Scope.SESSION:
            raise LookupError("the accelerator ledger keeps spend per user, agent and tenant, not per session")
        return float(ledger.spend(**{scope.value: key}, window=now - since, now=now).usd)

    return spend


class GatewayContext:
    """A thread-safe :class:`~agentcore.policies.context.DecisionContext` over a :class:`StateStore`."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.resolvers: dict[str, Resolver] = {}
        self.detectors: dict[str, Detector] = {}
        self.spend_source: SpendSource | None = None

    def _window(self, actions: Sequence[str], scope: Scope, key: str, since: float, now: float) -> list[CallRecord]:
        return [c for c in self.store.calls(scope, key, since) if c.ts <= now and action_matches(c.tool, actions)]

    def resolve(self, entity: str, key: Any) -> Mapping[str, Any] | None:
        loader = self.resolvers.get(entity)
        if loader is None:
            raise LookupError(f"no resolver registered for entity {entity!r}; register one with @gateway.resolver")
        return loader(key)

    def count(self, actions: Sequence[str], scope: Scope, key: str, window_seconds: float, now: datetime) -> int:
        end = now.timestamp()
        return len(self._window(actions, scope, key, end - window_seconds, end))

    def total(
        self,
        actions: Sequence[str],
        arg_path: Sequence[str],
        scope: Scope,
        key: str,
        window_seconds: float,
        now: datetime,
    ) -> float:
        end = now.timestamp()
        calls = self._window(actions, scope, key, end - window_seconds, end)
        return argument_total((call.args for call in calls), arg_path)

    def last_call(self, actions: Sequence[str], scope: Scope, key: str, now: datetime) -> datetime | None:
        end = now.timestamp()
        calls = self._window(actions, scope, key, 0.0, end)
        latest = max((c.ts for c in calls), default=None)
        return None if latest is None else datetime.fromtimestamp(latest, tz=UTC)

    def spend(self, scope: Scope, key: str, since: datetime, now: datetime) -> float:
        if self.spend_source is None:
            raise LookupError("no accelerator ledger is connected to this gateway; set gateway.context.spend_source")
        return float(self.spend_source(scope, key, since, now))

    def detect(self, detector: str, text: str) -> float:
        function = self.detectors.get(detector)
        if function is None:
            raise LookupError(f"detector {detector!r} is not available; register it with @gateway.detector")
        return float(function(text))
