"""The gateway's DecisionContext: call history from the state store, resolvers, detectors and spend.

The policy engine asks; this answers from persisted state so that every gateway process sees the same history.
Missing resolvers/detectors/ledger raise, which the engine turns into fail-closed decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from agentcore.gateway.state import StateStore
from agentcore.policies.context import CallHistoryContext, Scope, action_matches

SpendSource = Callable[[Scope, str, datetime, datetime], float]


def ledger_spend(ledger: Any) -> SpendSource:
    """Budget rules read an :class:`agentcore.accel.ledger.Ledger`: USD of a user/agent/tenant in ``[since, now]``."""

    def spend(scope: Scope, key: str, since: datetime, now: datetime) -> float:
        if scope is Scope.SESSION:
            raise LookupError("the accelerator ledger keeps spend per user, agent and tenant, not per session")
        return float(ledger.spend(**{scope.value: key}, window=now - since, now=now).usd)

    return spend


class GatewayContext(CallHistoryContext):
    """A thread-safe :class:`~agentcore.policies.context.DecisionContext` over a :class:`StateStore`."""

    resolver_hint = "@gateway.resolver"
    detector_hint = "@gateway.detector"

    def __init__(self, store: StateStore) -> None:
        super().__init__()
        self.store = store
        self.spend_source: SpendSource | None = None

    def _window(
        self, actions: Sequence[str], scope: Scope, key: str, start: float, end: float
    ) -> list[tuple[float, Mapping[str, Any]]]:
        return [
            (c.ts, c.args)
            for c in self.store.calls(scope, key, start)
            if c.ts <= end and action_matches(c.tool, actions)
        ]

    def spend(self, scope: Scope, key: str, since: datetime, now: datetime) -> float:
        if self.spend_source is None:
            raise LookupError("no accelerator ledger is connected to this gateway; set gateway.context.spend_source")
        return float(self.spend_source(scope, key, since, now))
