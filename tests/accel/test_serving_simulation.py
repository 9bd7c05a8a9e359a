"""Continuous batching: iteration timing, chunked prefill, the KV-capacity limit, arrivals and goodput."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentcore.accel.errors import WorkloadError
from agentcore.accel.serving.catalogue import load_llms
from agentcore.accel.serving.costmodel import Layout, ReplicaCost
from agentcore.accel.serving.simulation import Requests, simulate, simulate_replica
from agentcore.accel.sim.profiles import Figure, load_catalog
from agentcore.accel.sim.workload import Arrivals, BurstArrivals, PoissonArrivals, TraceArrivals


def _cost(model: str = "llama-3.1-8b", **layout: object) -> ReplicaCost:
    llms, chip = load_llms(), load_catalog().chips["trn3"]
    return ReplicaCost(llms.model(model), chip, llms.efficiency("trn3"), Layout.model_validate(layout))


@pytest.mark.parametrize("model", ["llama-3.1-8b", "gpt-oss-120b"])  # dense (inlined formula) and MoE
def test_one_request_takes_prefill_then_one_iteration_per_token(model: str) -> None:
    cost = _cost(model)
    run = simulate_replica(cost, np.array([0.5]), np.array([300]), np.array([11]))
    prefill = cost.step_seconds(300, 300 * 301 // 2)
    decode = [cost.step_seconds(1, 300 + k + 1) for k in range(10)]
    assert run.ttft[0] == pytest.approx(prefill) and run.iterations == 11
    assert run.tpot[0] == pytest.approx(sum(decode) / 10)
    assert run.e2e[0] == pytest.approx(prefill + sum(decode))


def test_chunked_prefill_splits_a_long_prompt_over_iterations() -> None:
    cost = _cost(chunk_tokens=512)
    run = simulate_replica(cost, np.array([0.0]), np.array([2000]), np.array([1]))
    assert run.iterations == math.ceil(2000 / 512)
    done, expected = 0, 0.0
    while done < 2000:
        take = min(512, 2000 - done)
        expected += cost.step_seconds(take, take * done + take * (take + 1) // 2)
        done += take
    assert run.ttft[0] == pytest.approx(expected)


def test_decoding_sequences_share_iterations_with_new_prefills() -> None:
    cost = _cost(chunk_tokens=4096)
    batched = simulate_replica(cost, np.zeros(8), np.full(8, 200), np.full(8, 50))
    alone = simulate_replica(cost, np.zeros(1), np.full(1, 200), np.full(1, 50))
    assert batched.iterations == alone.iterations  # all eight prefill in one iteration, then decode together
    assert batched.makespan < 2 * alone.makespan


def _cost_with_kv_room(tokens: int) -> ReplicaCost:
    """Llama 3.1 8B on one Trn3 with HBM left for only about ``tokens`` KV-cache tokens."""
    roomy = _cost()
    hbm = roomy.chip.hbm_gib.value * 2**30
    fraction = (roomy.weight_bytes + tokens * roomy.kv_per_token) / hbm
    memory = Figure(value=fraction, assumption=f"test: KV room for {tokens:,} tokens")
    efficiency = roomy.efficiency.model_copy(update={"memory_fraction": memory})
    return ReplicaCost(roomy.model, roomy.chip, efficiency, roomy.layout)


def test_kv_capacity_holds_back_admission_until_a_sequence_finishes() -> None:
    cost = _cost_with_kv_room(2100)  # room for two requests
    assert 2010 <= cost.kv_capacity_tokens <= 2100
    run = simulate_replica(cost, np.zeros(3), np.full(3, 1000), np.full(3, 5))
    assert run.ttft[2] >= run.e2e[0] - 1e-12 and run.ttft[1] < run.e2e[0]
    with pytest.raises(WorkloadError, match="exceeds the replica's KV capacity"):
        simulate_replica(cost, np.zeros(1), np.array([cost.kv_capacity_tokens]), np.array([5]))


def test_max_batch_limits_the_running_sequences() -> None:
    run = simulate_replica(_cost(max_batch=1), np.zeros(2), np.full(2, 100), np.full(2, 20))
    assert run.ttft[1] >= run.e2e[0]


def test_arrival_processes_are_reproducible_and_goodput_counts_the_slo() -> None:
    cost = _cost(max_batch=64)
    poisson = Requests(arrivals=PoissonArrivals(rate=40, requests=400), input_tokens=800, output_tokens=120, spread=0.5)
    first, again = simulate(cost, poisson, replicas=2), simulate(cost, poisson, replicas=2)
    assert first.ttft == again.ttft and first.requests == 400 and first.chips == 2
    assert first.simulated and first.usd > 0 and first.joules > 0
    tight = simulate(cost, poisson, replicas=2, ttft_slo_ms=first.ttft.p50_ms, tpot_slo_ms=1e9)
    assert 0.3 < tight.slo_attained < 0.7 and tight.goodput_rps < tight.requests / tight.makespan_s
    burst = simulate(
        cost, Requests(arrivals=BurstArrivals(size=50, bursts=2, interval_s=5), input_tokens=500, output_tokens=50)
    )
    trace = simulate(
        cost, Requests(arrivals=TraceArrivals(times_s=[0.0, 0.0, 1.0]), input_tokens=500, output_tokens=50)
    )
    assert burst.requests == 100 and burst.ttft.p99_ms > burst.ttft.p50_ms and trace.requests == 3
    with pytest.raises(WorkloadError, match="replicas must be at least 1"):
        simulate(cost, poisson, replicas=0)


def _reference_replica(
    cost: ReplicaCost, times: np.ndarray, prompts: np.ndarray, outputs: np.ndarray
) -> tuple[list[float], list[float], int]:
    """The module docstring's rules, the plain way: per-request state, every sequence stepped every iteration."""
    capacity, max_batch, budget_total = cost.kv_capacity_tokens, cost.layout.max_batch, cost.layout.chunk_tokens
    n = len(times)
    ttft, e2e = [0.0] * n, [0.0] * n
    queue: list[int] = []
    prefilling: list[list[int]] = []  # [request, prompt tokens done]
    decoding: dict[int, list[int]] = {}  # request -> [context tokens, tokens still to produce]
    clock, arrived, served, kv_used, iterations = 0.0, 0, 0, 0, 0
    while served < n:
        while arrived < n and times[arrived] <= clock:
            queue.append(arrived)
            arrived += 1
        while queue and len(prefilling) + len(decoding) < max_batch:
            need = int(prompts[queue[0]] + outputs[queue[0]])
            if kv_used + need > capacity:
                break
            kv_used += need
            prefilling.append([queue.pop(0), 0])
        if not prefilling and not decoding:
            clock = float(times[arrived])
            continue
        tokens = len(decoding)
        keys = sum(context + 1 for context, _ in decoding.values())
        budget, joined = budget_total - tokens, []
        for entry in list(prefilling):
            if budget <= 0:
                break
            request, done = entry
            take = min(int(prompts[request]) - done, budget)
            keys += sum(done + k for k in range(1, take + 1))
            tokens, budget, entry[1] = tokens + take, budget - take, done + take
            if entry[1] == prompts[request]:
                prefilling.remove(entry)
                joined.append(request)
        clock += cost.step_seconds(tokens, keys)
        iterations += 1
        for request, state in list(decoding.items()):
            state[0] += 1
            state[1] -= 1
            if not state[1]:
                del decoding[request]
                kv_used -= int(prompts[request] + outputs[request])
                e2e[request], served = clock - times[request], served + 1
        for request in joined:
            ttft[request] = clock - times[request]
            if outputs[request] == 1:
                kv_used -= int(prompts[request] + outputs[request])
                e2e[request], served = ttft[request], served + 1
            else:
                decoding[request] = [int(prompts[request]), int(outputs[request]) - 1]
    return ttft, e2e, iterations


@pytest.mark.parametrize(
    ("cost", "arrivals"),
    [  # chunked prefill and a batch limit
        (_cost(max_batch=16, chunk_tokens=512), PoissonArrivals(rate=30, requests=300)),
        # decoding fills the iteration budget: no room for prefill until a sequence finishes
        (_cost(max_batch=4, chunk_tokens=2), PoissonArrivals(rate=5, requests=300)),
        # tensor parallel, mostly pure-decode iterations between arrivals
        (_cost("llama-3.1-70b", tp=4, max_batch=64), PoissonArrivals(rate=60, requests=300)),
        # MoE: the weights read depend on the batch
        (_cost("gpt-oss-120b", max_batch=32, chunk_tokens=1024), PoissonArrivals(rate=40, requests=300)),
        # overloaded: a queue waits for the batch limit
        (_cost(max_batch=256), PoissonArrivals(rate=400, requests=300)),
        # bursts wait for KV room that finishing sequences free
        (_cost_with_kv_room(3000), BurstArrivals(size=40, bursts=3, interval_s=0.5)),
    ],
    ids=["chunked", "no-prefill-room", "tp4", "moe", "batch-queue", "kv-queue"],
)
def test_simulation_matches_a_straightforward_reference(cost: ReplicaCost, arrivals: Arrivals) -> None:
    requests = Requests(arrivals=arrivals, input_tokens=300, output_tokens=40, spread=0.9, seed=3)
    times, prompts, outputs = requests.draw()
    ttft, e2e, iterations = _reference_replica(cost, times, prompts, outputs)
    run = simulate_replica(cost, times, prompts, outputs)
    assert run.iterations == iterations
    np.testing.assert_allclose(run.ttft, ttft, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.e2e, e2e, rtol=1e-12, atol=1e-12)
