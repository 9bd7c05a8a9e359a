"""The gateway's OpenTelemetry instruments: decisions, latencies, approvals waiting, audit writes.

One set per meter (instruments are registered once per name); the approvals gauges read the approval table of each
live gateway that reports to that meter when a reader collects, so a scrape costs one small query per gateway and
the hot path nothing.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from opentelemetry import metrics

from agentcore.accel.telemetry import meter, per_object

if TYPE_CHECKING:
    from agentcore.gateway.approvals import ApprovalStore

SCOPE = "agentcore.gateway"
_LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


class GatewayMetrics:
    """The instruments of one meter."""

    def __init__(self, source: metrics.Meter) -> None:
        self._watched: weakref.WeakKeyDictionary[ApprovalStore, str] = weakref.WeakKeyDictionary()  # store -> gateway
        self.decisions = source.create_counter(
            "agentcore.gateway.decisions", unit="{decision}", description="policy decisions by effect, rule and tool"
        )
        self.decision_duration = source.create_histogram(
            "agentcore.gateway.decision.duration", unit="s", description="call received to decision recorded",
            explicit_bucket_boundaries_advisory=_LATENCY_BUCKETS,
        )  # fmt: skip
        self.call_duration = source.create_histogram(
            "agentcore.gateway.call.duration", unit="s", description="call received to result (or error) returned",
            explicit_bucket_boundaries_advisory=_LATENCY_BUCKETS,
        )  # fmt: skip
        self.audit_write_duration = source.create_histogram(
            "agentcore.gateway.audit.write.duration", unit="s", description="one audit record appended and committed",
            explicit_bucket_boundaries_advisory=_LATENCY_BUCKETS,
        )  # fmt: skip
        self.audit_write_failures = source.create_counter(
            "agentcore.gateway.audit.write.failures", unit="{write}", description="audit appends the database refused"
        )
        source.create_observable_gauge(
            "agentcore.gateway.approvals.pending", unit="{approval}", description="approval requests awaiting a human",
            callbacks=[self._pending_counts],
        )  # fmt: skip
        source.create_observable_gauge(
            "agentcore.gateway.approvals.oldest_age", unit="s", description="age of the oldest pending request",
            callbacks=[self._oldest_ages],
        )  # fmt: skip

    def called(self, tool: str, outcome: str, seconds: float) -> None:
        self.call_duration.record(seconds, {"tool": tool, "outcome": outcome})

    def decided(self, tool: str, effect: str, rules: Sequence[str], seconds: float) -> None:
        for rule in rules or ("",):
            self.decisions.add(1, {"effect": effect, "rule": rule, "tool": tool})
        self.decision_duration.record(seconds, {"effect": effect, "tool": tool})

    def watch_approvals(self, gateway: str, store: ApprovalStore) -> None:
        """Report ``store``'s pending approvals under ``gateway`` while it lives."""
        self._watched[store] = gateway

    def _summaries(self) -> dict[str, tuple[int, float | None]]:
        """Pending count and oldest request time per gateway name (gateways sharing a name are added up)."""
        found: dict[str, tuple[int, float | None]] = {}
        for store, name in list(self._watched.items()):
            try:
                count, oldest = store.pending_summary()
            except Exception:  # a closed or unreachable database: nothing to report for it
                continue
            total, first = found.get(name, (0, None))
            found[name] = (total + count, min((t for t in (first, oldest) if t is not None), default=None))
        return found

    def _pending_counts(self, options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
        return [metrics.Observation(count, {"gateway": name}) for name, (count, _) in self._summaries().items()]

    def _oldest_ages(self, options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
        now = time.time()
        return [
            metrics.Observation(0.0 if oldest is None else now - oldest, {"gateway": name})
            for name, (_, oldest) in self._summaries().items()
        ]


_by_meter: weakref.WeakKeyDictionary[metrics.Meter, GatewayMetrics] = weakref.WeakKeyDictionary()


def gateway_metrics(provider: metrics.MeterProvider | None = None) -> GatewayMetrics | None:
    """The instruments of ``provider`` (default the global one); None while no SDK meter is installed."""
    source = meter(SCOPE, provider)
    if source is None:
        return None
    return per_object(_by_meter, source, GatewayMetrics)
