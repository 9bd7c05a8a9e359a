"""Summaries of a simulation: throughput, latency percentiles, utilisation, dollars and joules.

Costs are those of renting the whole simulated fleet for the run (``$/h x makespan``); energy is every
chip's idle draw for the makespan plus each busy core's share of (max - idle) power while it runs.
All of it is simulated and says so (``simulated: true``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentcore.accel.charts import line_chart
from agentcore.accel.sim.profiles import DeviceProfile
from agentcore.accel.sim.scheduler import SimulationRun, served_latencies
from agentcore.accel.sim.workload import Workload

_TIMELINE_BINS = 100
CDF_PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 100)


class LatencyStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: np.ndarray) -> LatencyStats:
        if not len(seconds):
            return cls(mean_ms=0.0, p50_ms=0.0, p95_ms=0.0, p99_ms=0.0, max_ms=0.0)
        p50, p95, p99 = np.percentile(seconds, [50, 95, 99]) * 1000
        return cls(
            mean_ms=float(seconds.mean() * 1000),
            p50_ms=float(p50),
            p95_ms=float(p95),
            p99_ms=float(p99),
            max_ms=float(seconds.max() * 1000),
        )


class TenantStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    completed: int
    rejected: int
    latency: LatencyStats


class SimulationReport(BaseModel):
    """What a simulated fleet did with a workload. Every number here is simulated, not measured."""

    model_config = ConfigDict(frozen=True)

    simulated: Literal[True] = True
    profile: str
    projected_hardware: bool
    chips: int
    cores: int
    workload: str
    precision: str
    requests: int
    completed: int
    rejected: int
    makespan_s: float
    throughput_rps: float
    latency: LatencyStats
    mean_queue_ms: float
    mean_device_ms: float
    batches: int
    mean_batch: float
    utilisation: float
    usd: float
    joules: float
    usd_per_1k: float
    joules_per_1k: float
    replicas: dict[str, int]
    tenants: dict[str, TenantStats]
    events: int
    wall_seconds: float
    timeline: list[tuple[float, float]]  # (time s, busy fraction of all cores)
    latency_cdf: list[tuple[float, float]]  # (percentile, latency ms)


def _busy_timeline(batches: np.ndarray, cores: int, end: float) -> list[tuple[float, float]]:
    """Fraction of all cores busy in each of ``_TIMELINE_BINS`` equal slices of ``[0, end]``."""
    if not len(batches) or end <= 0:
        return []
    edges = np.linspace(0.0, end, _TIMELINE_BINS + 1)
    starts, ends = np.sort(batches[:, 0]), np.sort(batches[:, 1])

    def covered(t: np.ndarray) -> np.ndarray:  # total busy core-seconds before each t
        n_start = np.searchsorted(starts, t, side="right")
        n_end = np.searchsorted(ends, t, side="right")
        start_sum = np.concatenate(([0.0], np.cumsum(starts)))[n_start]
        end_sum = np.concatenate(([0.0], np.cumsum(ends)))[n_end]
        return (n_start * t - start_sum) - (n_end * t - end_sum)

    busy = np.diff(covered(edges))
    width = end / _TIMELINE_BINS
    return [(float(t), float(b / (width * cores))) for t, b in zip(edges[:-1], busy, strict=True)]


def summarise(simulation: SimulationRun, workload: Workload, profile: DeviceProfile) -> SimulationReport:
    """Reduce a run's batches and served ranges to the report."""
    latencies, queues, tenants = [], [], {}
    arrivals_first, rejected = np.inf, 0
    per_tenant: dict[str, list[np.ndarray]] = {}
    rejected_by_tenant: dict[str, int] = {}
    requests = 0
    for model in simulation.models:
        for stream in model.streams:
            _, queue, total = served_latencies(stream)
            latencies.append(total)
            queues.append(queue)
            per_tenant.setdefault(stream.tenant, []).append(total)
            rejected_by_tenant[stream.tenant] = rejected_by_tenant.get(stream.tenant, 0) + stream.rejected
            rejected += stream.rejected
            requests += len(stream.times)
            if len(stream.times):
                arrivals_first = min(arrivals_first, float(stream.times[0]))
    for tenant, parts in per_tenant.items():
        joined = np.concatenate(parts)
        tenants[tenant] = TenantStats(
            completed=len(joined), rejected=rejected_by_tenant[tenant], latency=LatencyStats.of(joined)
        )
    latency = np.concatenate(latencies) if latencies else np.empty(0)
    queue = np.concatenate(queues) if queues else np.empty(0)
    batch_rows = [batch for model in simulation.models for batch in model.batches]
    batches = np.asarray([(start, end) for _, start, end, _ in batch_rows], dtype=np.float64).reshape(-1, 2)
    sizes = np.asarray([size for *_, size in batch_rows], dtype=np.float64)
    origin = 0.0 if arrivals_first == np.inf else arrivals_first
    finish = float(batches[:, 1].max()) if len(batches) else origin
    makespan = max(finish - origin, 0.0)
    busy = float((batches[:, 1] - batches[:, 0]).sum()) if len(batches) else 0.0
    usd = profile.usd_per_hour * makespan / 3600
    joules = profile.chips * profile.chip.idle_watts.value * makespan + busy * profile.core_active_watts
    completed = len(latency)
    per_1k = 1000 / completed if completed else 0.0
    device = (batches[:, 1] - batches[:, 0]) if len(batches) else np.empty(0)
    return SimulationReport(
        profile=profile.name,
        projected_hardware=profile.projected,
        chips=profile.chips,
        cores=profile.cores,
        workload=workload.name,
        precision=workload.precision,
        requests=requests,
        completed=completed,
        rejected=rejected,
        makespan_s=makespan,
        throughput_rps=completed / makespan if makespan > 0 else 0.0,
        latency=LatencyStats.of(latency),
        mean_queue_ms=float(queue.mean() * 1000) if len(queue) else 0.0,
        mean_device_ms=float(np.average(device, weights=sizes) * 1000) if len(device) else 0.0,
        batches=len(batches),
        mean_batch=float(sizes.mean()) if len(sizes) else 0.0,
        utilisation=busy / (profile.cores * makespan) if makespan > 0 else 0.0,
        usd=usd,
        joules=joules,
        usd_per_1k=usd * per_1k,
        joules_per_1k=joules * per_1k,
        replicas={name: len(cores) for name, cores in simulation.placement.items()},
        tenants=tenants,
        events=requests + 2 * len(batches),
        wall_seconds=simulation.wall_seconds,
        timeline=_busy_timeline(batches - [origin, origin], profile.cores, makespan),
        latency_cdf=[
            (float(p), float(v) * 1000)
            for p, v in zip(CDF_PERCENTILES, np.percentile(latency, CDF_PERCENTILES) if completed else [], strict=False)
        ],
    )


def utilisation_chart(report: SimulationReport, *, title: str | None = None) -> str:
    """Busy share of all cores over the run (simulated); the axis fits the data, small loads stay visible."""
    return line_chart(
        {report.profile: [(t, 100 * busy) for t, busy in report.timeline]},
        title=title or f"Simulated utilisation, {report.profile}", x_label="time since the first request (s)",
        y_label="cores busy (%)", css="utilisation",
    )  # fmt: skip


def latency_chart(report: SimulationReport, *, title: str | None = None) -> str:
    """The latency distribution (simulated): what share of requests finished within each latency."""
    return line_chart(
        {report.profile: [(ms, p) for p, ms in report.latency_cdf]},
        title=title or f"Simulated latency, {report.profile}", x_label="latency (ms)",
        y_label="requests finished within (%)", y_range=(0.0, 100.0), css="latency",
    )  # fmt: skip
