"""Capacity planning: how many chips serve X requests/s with p99 latency under Y ms, at any scale.

A fleet behind a load balancer that splits Poisson traffic at random is a set of independent units,
each seeing Poisson traffic at ``rate / units`` (thinning). So one unit (a chip by default) is
simulated at a range of loads, the highest load that still meets the p99 target is found by bisection,
and the fleet size follows by division: a million-chip question costs a dozen one-chip simulations.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from agentcore.accel.errors import WorkloadError
from agentcore.accel.sim.models import resolve_model
from agentcore.accel.sim.profiles import DeviceProfile
from agentcore.accel.sim.report import summarise
from agentcore.accel.sim.scheduler import run
from agentcore.accel.sim.service import ServiceCache
from agentcore.accel.sim.workload import PoissonArrivals, Stream, Workload

_BISECTION_STEPS = 14


class CapacityQuestion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    target_rps: float = Field(gt=0)
    p99_ms: float = Field(gt=0)
    seq: int = Field(default=128, ge=1)
    precision: str = "bf16"
    max_batch: int = Field(default=32, ge=1)
    max_delay_ms: float = Field(default=2.0, ge=0)
    probe_requests: int = Field(default=20_000, ge=1000, description="requests simulated per probe load")


class CapacityPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    simulated: bool = True
    unit: str
    unit_chips: int
    per_unit_rps: float
    per_unit_p99_ms: float
    units: int
    chips: int
    cores: int
    usd_per_hour: float
    probes: int


def _p99_at(rate: float, question: CapacityQuestion, service: ServiceCache) -> float:
    workload = Workload(
        name="capacity-probe",
        streams=[
            Stream(
                model=question.model,
                seq=question.seq,
                arrivals=PoissonArrivals(rate=rate, requests=question.probe_requests),
            )
        ],
        precision=question.precision,  # type: ignore[arg-type]
        max_batch=question.max_batch,
        max_delay_ms=question.max_delay_ms,
        max_queue=question.probe_requests,
    )
    return summarise(run(workload, service), workload, service.profile).latency.p99_ms


def plan_capacity(question: CapacityQuestion, unit: DeviceProfile, service: ServiceCache | None = None) -> CapacityPlan:
    """Smallest number of ``unit`` systems that carries ``target_rps`` with p99 <= ``p99_ms``."""
    service = service or ServiceCache(unit)
    table = service.table(resolve_model(question.model), question.seq, question.precision, question.max_batch)
    ceiling = unit.cores * question.max_batch / float(table.seconds[question.max_batch])  # saturated throughput
    single = float(table.seconds[1]) * 1000
    if single > question.p99_ms:
        raise WorkloadError(
            f"p99 target {question.p99_ms} ms is below one request's device time on {unit.name} "
            f"({single:.3f} ms): no fleet size can meet it; relax the target or pick faster hardware"
        )
    low, high, best_p99, probes = 0.0, ceiling, single, 0
    for _ in range(_BISECTION_STEPS):
        middle = (low + high) / 2
        p99 = _p99_at(middle, question, service)
        probes += 1
        if p99 <= question.p99_ms:
            low, best_p99 = middle, p99
        else:
            high = middle
    if low == 0.0:
        raise WorkloadError(f"no load on {unit.name} meets p99 <= {question.p99_ms} ms; relax the target")
    units = math.ceil(question.target_rps / low)
    return CapacityPlan(
        unit=unit.name,
        unit_chips=unit.chips,
        per_unit_rps=low,
        per_unit_p99_ms=best_p99,
        units=units,
        chips=units * unit.chips,
        cores=units * unit.cores,
        usd_per_hour=units * unit.usd_per_hour,
        probes=probes,
    )
