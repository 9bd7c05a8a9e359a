"""Discrete-event simulation of continuous batching (iteration-level scheduling) on LLM replicas.

Each replica runs iterations back to back while it has work. Before an iteration it admits waiting
requests in arrival order while fewer than ``max_batch`` sequences run and their whole KV footprint
(prompt + output tokens) fits the replica's KV capacity; then the iteration advances every decoding
sequence by one token and spends the rest of the ``chunk_tokens`` budget on prefill chunks, oldest
first. A request's first token comes at the end of the iteration that finishes its prompt (TTFT); it
then decodes one token per iteration (TPOT). Requests are spread over replicas round-robin. Arrival
times come from the scheduler's workload processes (Poisson, bursts, replayed traces), so the same seed
gives the same run. Everything is per replica and scalar, so a million requests take seconds.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentcore.accel.errors import WorkloadError
from agentcore.accel.serving.costmodel import Layout, ReplicaCost
from agentcore.accel.sim.workload import Arrivals


class Requests(BaseModel):
    """Arrival process plus token counts: fixed, or ``*_spread`` uniform +-fraction around the mean."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arrivals: Arrivals
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    spread: float = Field(default=0.0, ge=0, lt=1, description="uniform +-fraction around both token counts")
    seed: int = 0

    def draw(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sorted arrival times and each request's prompt and output lengths (seeded)."""
        rng = np.random.default_rng(self.seed)
        times = self.arrivals.times(rng)
        n = len(times)

        def lengths(mean: int) -> np.ndarray:
            if not self.spread:
                return np.full(n, mean, dtype=np.int64)
            low, high = max(1, round(mean * (1 - self.spread))), round(mean * (1 + self.spread))
            return rng.integers(low, high + 1, n, dtype=np.int64)

        return times, lengths(self.input_tokens), lengths(self.output_tokens)


class ReplicaRun(BaseModel):
    """Per-request outcomes of one replica, in its arrival order (seconds)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    ttft: np.ndarray
    tpot: np.ndarray
    e2e: np.ndarray
    output_tokens: int
    input_tokens: int
    iterations: int
    busy_seconds: float
    makespan: float


def simulate_replica(cost: ReplicaCost, times: np.ndarray, prompts: np.ndarray, outputs: np.ndarray) -> ReplicaRun:
    """Continuous batching of the requests (sorted ``times``) on one replica; see the module docstring."""
    n = len(times)
    capacity = cost.kv_capacity_tokens
    need = (prompts + outputs).tolist()
    too_big = max(need, default=0)
    if too_big > capacity:
        raise WorkloadError(
            f"a request of {too_big:,} tokens exceeds the replica's KV capacity of {capacity:,} tokens "
            f"({cost.model.name}, {cost.layout.chips} x {cost.chip.name}); raise tp/pp or shorten requests"
        )
    arrival, prompt, output = times.tolist(), prompts.tolist(), outputs.tolist()
    arrival.append(math.inf)  # sentinel: no arrival check needs a bounds test
    max_batch, budget_total = cost.layout.max_batch, cost.layout.chunk_tokens
    weight_seconds = cost.weight_seconds
    weights, per_token_compute, per_key_compute, per_key_memory, fixed, per_token = cost.iteration_constants
    dense = weights >= 0
    first_token = [0.0] * n  # when each request's first and last tokens come out
    last_token = [0.0] * n
    # (last iteration, context tokens, reserved KV tokens, request) of every decoding sequence, soonest first:
    # an iteration only compares its number against the next completion
    finishing: list[tuple[int, int, int, int]] = []
    next_finish = -1
    clock = idle = 0.0
    next_arrival = arrival[0]
    arrived = admitted = prefill_head = prefill_done = 0
    running = decoding = context = kv_used = iteration = 0
    while prefill_head < n or decoding:
        while next_arrival <= clock:
            arrived += 1
            next_arrival = arrival[arrived]
        while admitted < arrived and running < max_batch and kv_used + need[admitted] <= capacity:
            kv_used += need[admitted]
            running += 1
            admitted += 1
        if not decoding and prefill_head == admitted:  # idle until the next arrival
            idle += next_arrival - clock
            clock = next_arrival
            continue
        budget = budget_total - decoding
        tokens, keys = decoding, context + decoding
        joined_from = prefill_head  # prompts finish in admission order: the joiners are a range
        while budget > 0 and prefill_head < admitted:
            left = prompt[prefill_head] - prefill_done
            take = left if left < budget else budget
            keys += take * prefill_done + take * (take + 1) // 2
            tokens += take
            budget -= take
            if take == left:
                prefill_head += 1
                prefill_done = 0
            else:
                prefill_done += take
        # Run this iteration and, while they are pure decode, the next ones in place: until a sequence
        # finishes while requests wait, or a request arrives while none wait, nothing else can happen.
        horizon = -math.inf if tokens != decoding else next_arrival if admitted == arrived else math.inf
        read = weights if dense else weight_seconds(tokens)
        while True:  # the cost model's step_seconds, inlined (this loop runs millions of times)
            compute = tokens * per_token_compute + keys * per_key_compute
            memory = read + (keys + tokens) * per_key_memory
            clock += (compute if compute > memory else memory) + fixed + tokens * per_token
            context += decoding
            if iteration == next_finish:
                while finishing and finishing[0][0] == iteration:
                    _, released_context, released_kv, request = heapq.heappop(finishing)
                    last_token[request] = clock
                    decoding -= 1
                    running -= 1
                    context -= released_context
                    kv_used -= released_kv
                next_finish = finishing[0][0] if finishing else -1
                if admitted != arrived or not decoding:
                    break
                if not dense:
                    read = weight_seconds(decoding)
            if clock >= horizon:
                break
            iteration += 1
            tokens, keys = decoding, context + decoding
        if joined_from != prefill_head:
            for request in range(joined_from, prefill_head):
                first_token[request] = clock
                out = output[request]
                if out == 1:
                    last_token[request] = clock
                    kv_used -= need[request]
                    running -= 1
                    continue
                decoding += 1
                context += prompt[request]
                heapq.heappush(finishing, (iteration + out - 1, prompt[request] + out - 1, need[request], request))
                next_finish = finishing[0][0]
        iteration += 1
    first, last_t = np.asarray(first_token), np.asarray(last_token)
    steps = np.maximum(outputs - 1, 1)
    return ReplicaRun(
        ttft=first - times,
        tpot=np.where(outputs > 1, (last_t - first) / steps, 0.0),
        e2e=last_t - times,
        output_tokens=int(outputs.sum()),
        input_tokens=int(prompts.sum()),
        iterations=iteration,
        busy_seconds=clock - idle,
        makespan=clock,
    )


class Percentiles(BaseModel):
    model_config = ConfigDict(frozen=True)

    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float

    @classmethod
    def of(cls, seconds: np.ndarray) -> Percentiles:
        if not len(seconds):
            return cls(mean_ms=0.0, p50_ms=0.0, p90_ms=0.0, p99_ms=0.0)
        p50, p90, p99 = np.percentile(seconds, [50, 90, 99]) * 1000
        return cls(mean_ms=float(seconds.mean() * 1000), p50_ms=float(p50), p90_ms=float(p90), p99_ms=float(p99))


class ServingReport(BaseModel):
    """A simulated serving run: latency distributions, throughput, goodput at the SLO, dollars and joules."""

    model_config = ConfigDict(frozen=True)

    simulated: bool = True
    model: str
    device: str
    layout: Layout
    replicas: int
    chips: int
    requests: int
    iterations: int
    ttft: Percentiles
    tpot: Percentiles
    e2e: Percentiles
    output_tokens_per_s: float
    goodput_rps: float = Field(description="requests/s that met both the TTFT and TPOT targets")
    slo_attained: float
    makespan_s: float
    usd: float
    joules: float
    usd_per_million_output_tokens: float
    output_tokens_per_joule: float
    wall_seconds: float


def simulate(
    cost: ReplicaCost,
    requests: Requests,
    *,
    replicas: int = 1,
    device: str = "",
    ttft_slo_ms: float = float("inf"),
    tpot_slo_ms: float = float("inf"),
) -> ServingReport:
    """Spread ``requests`` round-robin over ``replicas`` copies of ``cost`` and simulate each."""
    if replicas < 1:
        raise WorkloadError(f"replicas must be at least 1, got {replicas}")
    started = time.perf_counter()
    times, prompts, outputs = requests.draw()
    runs = [
        simulate_replica(cost, times[r::replicas], prompts[r::replicas], outputs[r::replicas]) for r in range(replicas)
    ]
    return _summarise(cost, runs, device=device, ttft_slo_ms=ttft_slo_ms, tpot_slo_ms=tpot_slo_ms, started=started)


def _summarise(
    cost: ReplicaCost,
    runs: Sequence[ReplicaRun],
    *,
    device: str,
    ttft_slo_ms: float,
    tpot_slo_ms: float,
    started: float,
) -> ServingReport:
    ttft, tpot, e2e = (np.concatenate([getattr(run, name) for run in runs]) for name in ("ttft", "tpot", "e2e"))
    makespan = max(run.makespan for run in runs)
    busy = sum(run.busy_seconds for run in runs)
    idle = len(runs) * makespan - busy
    chip = cost.chip
    joules = busy * cost.watts + idle * cost.layout.chips * chip.idle_watts.value
    usd = len(runs) * makespan * cost.usd_per_second
    produced = sum(run.output_tokens for run in runs)
    good = int(((ttft * 1000 <= ttft_slo_ms) & (tpot * 1000 <= tpot_slo_ms)).sum())
    return ServingReport(
        model=cost.model.key,
        device=device or chip.key,
        layout=cost.layout,
        replicas=len(runs),
        chips=len(runs) * cost.layout.chips,
        requests=len(ttft),
        iterations=sum(run.iterations for run in runs),
        ttft=Percentiles.of(ttft),
        tpot=Percentiles.of(tpot),
        e2e=Percentiles.of(e2e),
        output_tokens_per_s=produced / makespan if makespan else 0.0,
        goodput_rps=good / makespan if makespan else 0.0,
        slo_attained=good / len(ttft) if len(ttft) else 1.0,
        makespan_s=makespan,
        usd=usd,
        joules=joules,
        usd_per_million_output_tokens=usd / produced * 1e6 if produced else 0.0,
        output_tokens_per_joule=produced / joules if joules else 0.0,
        wall_seconds=time.perf_counter() - started,
    )
