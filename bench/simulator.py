"""Scheduler speed: agentcore's batch-dispatch event loop versus the same model written with SimPy.

Same model on both sides: one MiniLM replica per NeuronCore of a trn2.48xlarge (128 cores), one shared
queue, dynamic batching (max batch 32, max queue delay 2 ms), the same Poisson arrival times and the same
service-time table (from agentcore's cost model). SimPy is the field's standard discrete-event library;
its version is idiomatic (free cores in a Store, one dispatcher process, one process per batch). Both
count the same logical events (arrivals + batch starts + batch ends). Prints one JSON line: events/s
of each, the ratio, and both mean latencies (they must agree within 2%).

Needs the `bench` extra (`pip install simpy==4.1.2`) and the built encoder (`agentcore models build`).
"""

from __future__ import annotations

import json
import platform
import sys
import time

import numpy as np
import simpy

from agentcore.accel.sim.models import resolve_model
from agentcore.accel.sim.profiles import load_catalog
from agentcore.accel.sim.scheduler import run, served_latencies
from agentcore.accel.sim.service import ServiceCache
from agentcore.accel.sim.workload import PoissonArrivals, Stream, Workload

PROFILE = "trn2.48xlarge"
REQUESTS = 300_000
MAX_BATCH = 32
MAX_DELAY_S = 0.002
LOAD = 0.7  # offered load as a fraction of saturated capacity


def simpy_mean_latency(arrivals: np.ndarray, service: np.ndarray, cores: int) -> tuple[float, int]:
    """The same batching rule in idiomatic SimPy: free cores in a Store, one dispatcher, one process per batch.

    The dispatcher takes the earliest-freed core, waits for a request, then waits until ``MAX_BATCH`` are
    queued or the oldest has waited ``MAX_DELAY_S`` (Triton's rule), and starts the batch on that core.
    """
    env = simpy.Environment()
    free = simpy.Store(env, capacity=cores)
    free.items.extend(range(cores))
    queue: list[float] = []
    latencies: list[float] = []
    batches = 0
    wake = [env.event()]

    def arrive() -> simpy.events.ProcessGenerator:
        now = 0.0
        for at in arrivals:
            yield env.timeout(at - now)
            now = at
            queue.append(at)
            if wake[0].callbacks:  # someone waits for an arrival
                wake[0].succeed()
                wake[0] = env.event()

    def serve(core: int, batch: list[float]) -> simpy.events.ProcessGenerator:
        yield env.timeout(service[len(batch)])
        latencies.extend(env.now - at for at in batch)
        yield free.put(core)

    def dispatch() -> simpy.events.ProcessGenerator:
        nonlocal batches
        while True:
            core = yield free.get()
            while not queue:
                yield wake[0]
            deadline = queue[0] + MAX_DELAY_S
            while len(queue) < MAX_BATCH and env.now < deadline:
                yield env.any_of([wake[0], env.timeout(deadline - env.now)])
            batch = queue[:MAX_BATCH]
            del queue[:MAX_BATCH]
            batches += 1
            env.process(serve(core, batch))

    env.process(arrive())
    env.process(dispatch())
    env.run()
    return float(np.mean(latencies)), batches


def main() -> None:
    profile = load_catalog().profile(PROFILE)
    cache = ServiceCache(profile)
    table = cache.table(resolve_model("minilm"), 128, "bf16", MAX_BATCH)
    capacity = profile.cores * MAX_BATCH / float(table.seconds[MAX_BATCH])
    workload = Workload(
        name="bench",
        streams=[Stream(model="minilm", arrivals=PoissonArrivals(rate=LOAD * capacity, requests=REQUESTS))],
        max_batch=MAX_BATCH,
        max_delay_ms=MAX_DELAY_S * 1000,
        max_queue=REQUESTS,
        seed=1,
    )
    arrivals = workload.arrival_times()[0]

    started = time.perf_counter()
    simulation = run(workload, cache)
    ours_wall = time.perf_counter() - started
    (model,) = simulation.models
    ours_mean = float(served_latencies(model.streams[0])[2].mean())
    ours_events = REQUESTS + 2 * len(model.batches)

    started = time.perf_counter()
    simpy_mean, simpy_batches = simpy_mean_latency(arrivals, table.seconds, profile.cores)
    simpy_wall = time.perf_counter() - started
    simpy_events = REQUESTS + 2 * simpy_batches

    result = {
        "bench": "simulator_vs_simpy",
        "profile": PROFILE,
        "cores": profile.cores,
        "requests": REQUESTS,
        "offered_load": LOAD,
        "ours_events_per_s": round(ours_events / ours_wall),
        "simpy_events_per_s": round(simpy_events / simpy_wall),
        "speedup": round((ours_events / ours_wall) / (simpy_events / simpy_wall), 2),
        "ours_wall_s": round(ours_wall, 3),
        "simpy_wall_s": round(simpy_wall, 3),
        "ours_mean_latency_ms": round(ours_mean * 1000, 4),
        "simpy_mean_latency_ms": round(simpy_mean * 1000, 4),
        "mean_latency_rel_diff": round(abs(ours_mean - simpy_mean) / simpy_mean, 5),
        "ours_batches": len(model.batches),
        "simpy_batches": simpy_batches,
        "simpy": simpy.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
