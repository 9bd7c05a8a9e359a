"""LLM capacity planning: replicas and chips for N sessions/s at p99 TTFT and TPOT targets, cheapest layout.

Replicas behind a load balancer that spreads Poisson sessions at random each see Poisson traffic at
``rate / replicas``. So for every candidate layout (tensor / pipeline degree, batch limit, precision)
one replica is simulated at a handful of loads, the highest load meeting both p99 targets is found by
bisection, and the fleet follows by division: a million-chip answer costs a few one-replica runs.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from agentcore.accel.errors import ProfileError, WorkloadError
from agentcore.accel.serving.catalogue import LLMCatalogue
from agentcore.accel.serving.costmodel import Layout, ReplicaCost
from agentcore.accel.serving.pricing import rate_card
from agentcore.accel.serving.simulation import Requests, simulate
from agentcore.accel.sim.profiles import ChipSpec
from agentcore.accel.sim.workload import BurstArrivals, PoissonArrivals

_BISECTION_STEPS = 7


class SessionShape(BaseModel):
    """An agent session: ``turns`` LLM calls of ``input_tokens`` in (history included) and ``output_tokens`` out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turns: int = Field(default=1, ge=1)
    input_tokens: int = Field(default=2000, ge=1)
    output_tokens: int = Field(default=300, ge=1)


class LLMCapacityQuestion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    sessions_per_s: float = Field(gt=0)
    session: SessionShape = SessionShape()
    ttft_p99_ms: float = Field(gt=0)
    tpot_p99_ms: float = Field(gt=0)
    precisions: tuple[str, ...] = ("fp8",)
    tp: tuple[int, ...] = Field(default=(), description="tensor-parallel degrees to try; empty = powers of two")
    pp: tuple[int, ...] = (1, 2)
    max_batch: tuple[int, ...] = (64, 256)
    probe_requests: int = Field(default=1000, ge=100, description="requests simulated per probe load")


class LayoutPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    layout: Layout
    replica_chips: int
    per_replica_rps: float
    ttft_p99_ms: float
    tpot_p99_ms: float
    replicas: int
    chips: int
    usd_per_hour: float
    usd_per_session: float


class LLMCapacityPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    simulated: bool = True
    model: str
    chip: str
    best: LayoutPlan
    candidates: list[LayoutPlan]
    rejected: dict[str, str] = Field(description="layout -> why it cannot meet the targets")
    probes: int


def _candidates(question: LLMCapacityQuestion, chip: ChipSpec) -> list[Layout]:
    domain = int(chip.scaleup_chips.value) if chip.scaleup_chips else 1
    tps = question.tp or tuple(2**k for k in range(int(math.log2(domain)) + 1))
    return [
        Layout(tp=tp, pp=pp, precision=precision, max_batch=batch)
        for precision in question.precisions
        for tp in tps
        for pp in question.pp
        for batch in question.max_batch
    ]


class _Prober:
    def __init__(self, cost: ReplicaCost, question: LLMCapacityQuestion) -> None:
        self.cost, self.question, self.runs = cost, question, 0

    def p99(self, arrivals: PoissonArrivals | BurstArrivals) -> tuple[float, float]:
        """(p99 TTFT ms, p99 TPOT ms) of one replica under ``arrivals``."""
        shape = self.question.session
        requests = Requests(arrivals=arrivals, input_tokens=shape.input_tokens, output_tokens=shape.output_tokens)
        report = simulate(self.cost, requests)
        self.runs += 1
        return report.ttft.p99_ms, report.tpot.p99_ms

    def best_rate(self) -> tuple[float, float, float]:
        """Highest Poisson request rate meeting both targets, with its p99s; raises when none does."""
        q = self.question
        ttft, tpot = self.p99(BurstArrivals(size=1))
        if ttft > q.ttft_p99_ms or tpot > q.tpot_p99_ms:
            raise WorkloadError(f"one request alone takes TTFT {ttft:.1f} ms / TPOT {tpot:.2f} ms")
        shape = (q.session.input_tokens, q.session.output_tokens)
        card = rate_card(self.cost, shape)
        ceiling = 1 / (card.price(*shape).chip_seconds / self.cost.layout.chips)  # requests/s at saturation
        low, high, best = 0.0, ceiling, (ttft, tpot)
        for _ in range(_BISECTION_STEPS):
            middle = (low + high) / 2
            ttft, tpot = self.p99(PoissonArrivals(rate=middle, requests=q.probe_requests))
            if ttft <= q.ttft_p99_ms and tpot <= q.tpot_p99_ms:
                low, best = middle, (ttft, tpot)
            else:
                high = middle
        if low == 0.0:
            raise WorkloadError("no load meets both targets (queueing alone breaks them)")
        return low, *best


def plan_llm_capacity(question: LLMCapacityQuestion, chip: ChipSpec, catalogue: LLMCatalogue) -> LLMCapacityPlan:
    """Cheapest layout and fleet of ``chip`` for ``question``; infeasible layouts are listed with the reason.

    Layouts are tried cheapest-at-saturation first (their rate card is a lower bound on what a request can
    cost under any latency target), and the search stops once that bound exceeds the best plan found.
    """
    model = catalogue.model(question.model)
    efficiency = catalogue.efficiency(chip.key)
    shape = (question.session.input_tokens, question.session.output_tokens)
    target_rps = question.sessions_per_s * question.session.turns
    ranked: list[tuple[float, str, ReplicaCost]] = []
    rejected: dict[str, str] = {}
    for layout in _candidates(question, chip):
        label = f"tp{layout.tp}-pp{layout.pp}-b{layout.max_batch}-{layout.precision}"
        try:
            cost = ReplicaCost(model, chip, efficiency, layout)
            floor = rate_card(cost, shape).price(*shape).usd
        except ProfileError as error:
            rejected[label] = str(error)
            continue
        ranked.append((floor, label, cost))
    ranked.sort(key=lambda entry: entry[0])
    plans: list[LayoutPlan] = []
    probes = 0
    for floor, label, cost in ranked:
        if plans and floor * target_rps * 3600 >= plans[0].usd_per_hour:
            rejected[label] = "costs more than the best plan even at saturation (not simulated)"
            continue
        prober = _Prober(cost, question)
        try:
            rate, ttft, tpot = prober.best_rate()
        except WorkloadError as error:
            rejected[label] = str(error)
            continue
        finally:
            probes += prober.runs
        replicas = math.ceil(target_rps / rate)
        usd_per_hour = replicas * cost.usd_per_second * 3600
        plans.append(
            LayoutPlan(
                layout=cost.layout, replica_chips=cost.layout.chips, per_replica_rps=rate, ttft_p99_ms=ttft,
                tpot_p99_ms=tpot, replicas=replicas, chips=replicas * cost.layout.chips, usd_per_hour=usd_per_hour,
                usd_per_session=usd_per_hour / 3600 / question.sessions_per_s,
            )
        )  # fmt: skip
        plans.sort(key=lambda plan: (plan.usd_per_hour, plan.chips))
    if not plans:
        reasons = "; ".join(f"{label}: {why}" for label, why in list(rejected.items())[:4])
        raise WorkloadError(f"no layout of {chip.name} serves {model.name} within the targets ({reasons})")
    return LLMCapacityPlan(
        model=model.key, chip=chip.key, best=plans[0], candidates=plans, rejected=rejected, probes=probes
    )
