"""LLM serving simulation speed: agentcore's continuous-batching loop versus the same model written with SimPy.

Workload: Llama 3.1 70B at FP8 on one Trn3 Gen2 UltraServer (144 chips = 36 replicas at TP 4), Poisson
arrivals at 70% of the saturated capacity, prompts 1,000 +-50% and completions 200 +-50% tokens, 256
sequences per replica, 2,048-token iterations (chunked prefill). Both sides use the same arrivals, the
same round-robin split over replicas and the same iteration time (agentcore's cost model), and the same
rules (FCFS admission while the batch and the KV cache have room; every decoding sequence plus prefill
chunks per iteration). SimPy's version is idiomatic: an arrival process and an engine process per
replica, the engine sleeping on an event while idle and keeping each decoding sequence's remaining
tokens, updated every iteration (the straightforward way); ours files each completion under the
iteration it will happen in and runs pure-decode iterations back to back until a completion or an
arrival can change the schedule, which is the measured difference. Both count the same logical events
(arrivals + iterations + completions). Ours runs all REQUESTS once; SimPy, being slower, runs the first
SIDE_BY_SIDE of them, and ours runs that same subset ROUNDS times interleaved with SimPy (alternating
which goes first) for the ratio and the latency comparison (must agree < 1%). The ratio is of CPU time
(``time.process_time``), the median over the rounds: both sides run in this one process, so a loaded
machine slows both alike; the load average is printed with it.

Needs the `bench` extra (`pip install simpy==4.1.2`). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import simpy

from agentcore.accel.serving.catalogue import load_llms
from agentcore.accel.serving.costmodel import Layout, ReplicaCost
from agentcore.accel.serving.pricing import rate_card
from agentcore.accel.serving.simulation import Requests, simulate
from agentcore.accel.sim.profiles import load_catalog
from agentcore.accel.sim.workload import PoissonArrivals

SYSTEM = "trn3-ultraserver-gen2"
MODEL = "llama-3.1-70b"
LAYOUT = Layout(tp=4, precision="fp8", max_batch=256, chunk_tokens=2048)
REQUESTS = 1_000_000
SIDE_BY_SIDE = 100_000
ROUNDS = 5
LOAD = 0.7
SHAPE = (1000, 200)


def simpy_replica(
    env: simpy.Environment, cost: ReplicaCost, times: list[float], prompts: list[int], outputs: list[int],
    ttft: list[float], e2e: list[float], counters: list[int],
) -> None:  # fmt: skip
    """Start one replica's arrival and engine processes (the rules of agentcore.accel.serving.simulation)."""
    capacity, max_batch, budget_total = cost.kv_capacity_tokens, cost.layout.max_batch, cost.layout.chunk_tokens
    waiting: list[int] = []
    wake = [env.event()]

    def arrive() -> simpy.events.ProcessGenerator:
        for index, at in enumerate(times):
            yield env.timeout(at - env.now)
            waiting.append(index)
            if not wake[0].triggered:
                wake[0].succeed()

    def engine() -> simpy.events.ProcessGenerator:
        prefilling: list[int] = []  # admitted, prompt not finished (FCFS)
        decoding: dict[int, int] = {}  # request -> tokens still to produce
        context = kv_used = head_done = served = 0
        admitted = 0
        while served < len(times):
            while admitted < len(waiting) and len(prefilling) + len(decoding) < max_batch:
                request = waiting[admitted]
                need = prompts[request] + outputs[request]
                if kv_used + need > capacity:
                    break
                kv_used += need
                prefilling.append(request)
                admitted += 1
            if not prefilling and not decoding:
                wake[0] = env.event()
                yield wake[0]
                continue
            budget = budget_total - len(decoding)
            tokens, keys = len(decoding), context + len(decoding)
            joined = []
            while budget > 0 and prefilling:
                request = prefilling[0]
                left = prompts[request] - head_done
                take = min(left, budget)
                keys += take * head_done + take * (take + 1) // 2
                tokens += take
                budget -= take
                if take == left:
                    joined.append(prefilling.pop(0))
                    head_done = 0
                else:
                    head_done += take
            yield env.timeout(cost.step_seconds(tokens, keys))
            counters[0] += 1
            context += len(decoding)
            for request in [r for r, left in decoding.items() if left == 1]:
                del decoding[request]
                context -= prompts[request] + outputs[request] - 1
                kv_used -= prompts[request] + outputs[request]
                e2e[request] = env.now - times[request]
                served += 1
            for request in decoding:
                decoding[request] -= 1
            for request in joined:
                ttft[request] = env.now - times[request]
                if outputs[request] == 1:
                    kv_used -= prompts[request] + outputs[request]
                    e2e[request] = ttft[request]
                    served += 1
                else:
                    decoding[request] = outputs[request] - 1
                    context += prompts[request]

    env.process(arrive())
    env.process(engine())


def run_simpy(cost: ReplicaCost, requests: Requests, replicas: int) -> tuple[np.ndarray, np.ndarray, int, float]:
    times, prompts, outputs = requests.draw()
    env = simpy.Environment()
    ttfts, e2es, counters = [], [], [0]
    started = time.process_time()
    for r in range(replicas):
        share = times[r::replicas].tolist()
        ttft, e2e = [0.0] * len(share), [0.0] * len(share)
        ttfts.append(ttft)
        e2es.append(e2e)
        simpy_replica(env, cost, share, prompts[r::replicas].tolist(), outputs[r::replicas].tolist(), ttft, e2e,
                      counters)  # fmt: skip
    env.run()
    cpu = time.process_time() - started
    return np.concatenate(ttfts), np.concatenate(e2es), counters[0], cpu


def main() -> None:
    profile, llms = load_catalog().profile(SYSTEM), load_llms()
    cost = ReplicaCost(llms.model(MODEL), profile.chip, llms.efficiency(profile.chip.key), LAYOUT)
    replicas = profile.chips // LAYOUT.chips
    capacity = replicas * LAYOUT.chips / rate_card(cost, SHAPE).price(*SHAPE).chip_seconds

    def workload(n: int) -> Requests:
        arrivals = PoissonArrivals(rate=LOAD * capacity, requests=n)
        return Requests(arrivals=arrivals, input_tokens=SHAPE[0], output_tokens=SHAPE[1], spread=0.5, seed=1)

    load_before = os.getloadavg()[0]
    started = time.process_time()
    full = simulate(cost, workload(REQUESTS), replicas=replicas)
    full_cpu = time.process_time() - started
    ours_cpu, simpy_cpu, ratios = [], [], []
    for round_ in range(ROUNDS):  # interleaved, alternating which side goes first
        for side in ("ours", "simpy") if round_ % 2 == 0 else ("simpy", "ours"):
            if side == "ours":
                started = time.process_time()
                ours = simulate(cost, workload(SIDE_BY_SIDE), replicas=replicas)
                ours_cpu.append(time.process_time() - started)
            else:
                simpy_ttft, simpy_e2e, simpy_iterations, cpu = run_simpy(cost, workload(SIDE_BY_SIDE), replicas)
                simpy_cpu.append(cpu)
        ratios.append(simpy_cpu[-1] / ours_cpu[-1])
    if simpy_iterations != ours.iterations:
        raise SystemExit(f"the two models diverged: {ours.iterations} vs {simpy_iterations} iterations")
    events = 2 * SIDE_BY_SIDE + ours.iterations  # the same on both sides
    simpy_ttft_mean, simpy_e2e_mean = float(simpy_ttft.mean() * 1000), float(simpy_e2e.mean() * 1000)
    simpy_ttft_p99 = float(np.percentile(simpy_ttft, 99) * 1000)
    result = {
        "bench": "llm_serving_vs_simpy",
        "simulated": True,
        "system": SYSTEM,
        "model": MODEL,
        "replicas": replicas,
        "requests": REQUESTS,
        "wall_s_1m": round(full.wall_seconds, 2),
        "cpu_s_1m": round(full_cpu, 2),
        "events_per_s_1m": round((2 * REQUESTS + full.iterations) / full.wall_seconds),
        "side_by_side_requests": SIDE_BY_SIDE,
        "rounds": ROUNDS,
        "ours_events_per_cpu_s": round(events / statistics.median(ours_cpu)),
        "simpy_events_per_cpu_s": round(events / statistics.median(simpy_cpu)),
        "speedup": round(statistics.median(ratios), 2),
        "speedup_rounds": [round(ratio, 2) for ratio in ratios],
        "ours_ttft_mean_ms": round(ours.ttft.mean_ms, 3),
        "simpy_ttft_mean_ms": round(simpy_ttft_mean, 3),
        "ours_ttft_p99_ms": round(ours.ttft.p99_ms, 3),
        "simpy_ttft_p99_ms": round(simpy_ttft_p99, 3),
        "ours_e2e_mean_ms": round(ours.e2e.mean_ms, 3),
        "simpy_e2e_mean_ms": round(simpy_e2e_mean, 3),
        "max_latency_rel_diff": round(
            max(
                abs(ours.ttft.mean_ms - simpy_ttft_mean) / simpy_ttft_mean,
                abs(ours.e2e.mean_ms - simpy_e2e_mean) / simpy_e2e_mean,
                abs(ours.ttft.p99_ms - simpy_ttft_p99) / simpy_ttft_p99,
            ),
            6,
        ),
        "iterations": [ours.iterations, simpy_iterations],
        "p99_ttft_ms_1m": round(full.ttft.p99_ms, 2),
        "p99_tpot_ms_1m": round(full.tpot.p99_ms, 3),
        "usd_per_million_output_tokens_1m": round(full.usd_per_million_output_tokens, 4),
        "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "cpus": os.cpu_count(),
        "simpy": simpy.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
