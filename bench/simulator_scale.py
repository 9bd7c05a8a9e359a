"""Scale: simulate-only mode runs 1,000,000 MiniLM requests on a Trn3 Gen2 UltraServer (1,152 NeuronCores).

Target: within 10 s on a 2-core machine. Then a capacity question at cluster scale (requests/s at a p99
target, answered from one-chip simulations). Prints one JSON line. Needs the built encoder.
"""

from __future__ import annotations

import json
import os
import time

from agentcore.accel.sim.capacity import CapacityQuestion, plan_capacity
from agentcore.accel.sim.simulator import Simulator


def main() -> None:
    started = time.perf_counter()
    report = Simulator("trn3-ultraserver-gen2").run("scale-1m")
    total = time.perf_counter() - started
    unit = Simulator("trn3")
    started = time.perf_counter()
    plan = plan_capacity(CapacityQuestion(model="minilm", target_rps=4e10, p99_ms=10), unit.profile, unit.service)
    planning = time.perf_counter() - started
    print(
        json.dumps(
            {
                "bench": "simulator_scale",
                "requests": report.requests,
                "completed": report.completed,
                "cores": report.cores,
                "batches": report.batches,
                "event_loop_s": round(report.wall_seconds, 3),
                "total_s_including_costing": round(total, 3),
                "target_s": 10,
                "simulated_throughput_rps": round(report.throughput_rps),
                "simulated_p99_ms": round(report.latency.p99_ms, 3),
                "capacity_question": "chips for 4e10 req/s at p99 <= 10 ms (minilm, bf16, seq 128)",
                "capacity_chips": plan.chips,
                "capacity_s": round(planning, 3),
                "cpus": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
