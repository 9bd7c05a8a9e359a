"""The demo's model work, costed: measured CPU time, and the same calls replayed on two simulated fleets.

Every embedding the demo made (intents, memory, evaluators) is a receipt in the ledger. Replaying those calls,
at the times they happened, through the simulator on a Trn2 and a Trn3 UltraServer gives latency, dollars and
joules for each: simulated numbers from the cost model, next to the CPU time that was really spent here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from agentcore.accel.sim.profiles import DeviceProfile
from agentcore.accel.sim.report import SimulationReport, latency_chart, utilisation_chart
from agentcore.accel.sim.simulator import Simulator
from agentcore.accel.sim.workload import Stream, TraceArrivals, Workload

PROFILES = ("trn2-ultraserver", "trn3-ultraserver-gen2")


class FleetCost(BaseModel):
    """One simulated fleet's answer for the demo's model work (all simulated).

    ``busy_*`` count only the NeuronCore time the requests used (what a shared, pay-per-use fleet would bill);
    ``held_usd`` is the whole fleet held for the demo's span, as the simulator reports it.
    """

    profile: str
    requests: int
    p50_ms: float
    p99_ms: float
    busy_core_seconds: float
    busy_usd: float
    busy_joules: float
    held_usd: float


class CostSummary(BaseModel):
    """Measured CPU work, what the ledger was charged, and the two simulated fleets; ``by_agent`` splits the work."""

    calls: int
    texts: int
    tokens: int
    cpu_seconds: float
    ledger_usd: float
    ledger_joules: float
    fleets: list[FleetCost]
    by_agent: dict[str, dict[str, float]]


def replay_workload(receipts: Sequence[dict[str, Any]], *, model: str = "minilm") -> Workload:
    """The demo's embedding calls as a workload: each text arrives when its call did, at its mean length."""
    if not receipts:
        raise ValueError("no accelerator receipts to replay: the demo made no model calls")
    start = min(_time(r["at"]) for r in receipts)
    times = [(_time(r["at"]) - start) for r in receipts for _ in range(int(r["items"]))]
    items = sum(int(r["items"]) for r in receipts)
    seq = max(1, math.ceil(sum(int(r["tokens"]) for r in receipts) / max(items, 1)))
    stream = Stream(model=model, tenant="demo", seq=seq, arrivals=TraceArrivals(times_s=times))
    return Workload(name="agentcore-demo", description="the demo's own embedding calls", streams=[stream],
                    precision="fp32")  # fmt: skip


def summarise_costs(
    receipts: Sequence[dict[str, Any]], profiles: Sequence[str] = PROFILES
) -> tuple[CostSummary, dict[str, SimulationReport]]:
    """Measured totals from the receipts and one simulation report per profile."""
    workload = replay_workload(receipts)
    simulators = {profile: Simulator(profile) for profile in profiles}
    reports = {profile: simulator.run(workload) for profile, simulator in simulators.items()}
    by_agent: dict[str, dict[str, float]] = {}
    for receipt in receipts:
        key = receipt.get("agent") or "(library)"
        row = by_agent.setdefault(key, {"calls": 0, "texts": 0, "cpu_seconds": 0.0})
        row["calls"] += 1
        row["texts"] += int(receipt["items"])
        row["cpu_seconds"] += float(receipt["cpu_seconds"])
    summary = CostSummary(
        calls=len(receipts),
        texts=sum(int(r["items"]) for r in receipts),
        tokens=sum(int(r["tokens"]) for r in receipts),
        cpu_seconds=sum(float(r["cpu_seconds"]) for r in receipts),
        ledger_usd=sum(float(r["usd"]) for r in receipts),
        ledger_joules=sum(float(r["joules"]) for r in receipts),
        fleets=[_fleet(reports[p], simulators[p].profile) for p in profiles],
        by_agent=by_agent,
    )
    return summary, reports


def charts(reports: dict[str, SimulationReport]) -> dict[str, str]:
    """SVG charts per profile: latency distribution and utilisation over the demo's timeline."""
    files = {}
    for profile, report in reports.items():
        files[f"accel-latency-{profile}.svg"] = latency_chart(report)
        files[f"accel-utilisation-{profile}.svg"] = utilisation_chart(report)
    return files


def _fleet(report: SimulationReport, profile: DeviceProfile) -> FleetCost:
    busy = report.utilisation * report.cores * report.makespan_s
    return FleetCost(
        profile=report.profile,
        requests=report.requests,
        p50_ms=report.latency.p50_ms,
        p99_ms=report.latency.p99_ms,
        busy_core_seconds=busy,
        busy_usd=busy * profile.usd_per_core_second,
        busy_joules=busy * profile.core_active_watts,
        held_usd=report.usd,
    )


def _time(value: Any) -> float:
    return (value if isinstance(value, datetime) else datetime.fromisoformat(str(value))).timestamp()
