"""The MCP proxy's own cost per forwarded call, for comparing two checkouts: CPU time (user and system, all its
threads, from /proc) and context switches, which the host's load inflates far less than latency.

Each round starts the test upstream server and a proxy (``agentcore gateway serve``, HTTP, a bearer JWT, one
allow rule) from each checkout in turn, so a slow spell of a shared host hits both alike, drives the proxy with
official MCP clients at each concurrency and prints one JSON line: per checkout and concurrency, the median and
range over the rounds. The checkouts share this interpreter's environment (the SDK versions stay the same); the
code under test is the checkout's ``agentcore``, put first on ``PYTHONPATH``.

    python bench/mcp_proxy_cpu.py --tree ../main --tree . [--rounds 5] [--calls 500] [--clients 1,8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
from pathlib import Path
from typing import Any

from gateway import _drive, mcp_servers, percentile


def _usage(pid: int) -> dict[str, float]:
    """User and system CPU seconds and voluntary / involuntary context switches so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {
        "user_s": int(fields[11]) / tick,
        "sys_s": int(fields[12]) / tick,
        "voluntary": int(status["voluntary_ctxt_switches"]),
        "involuntary": int(status["nonvoluntary_ctxt_switches"]),
    }


def one_round(tree: Path, clients: list[int], calls: int) -> dict[int, dict[str, float]]:
    """Start upstream and proxy from ``tree``, warm up, then measure ``calls`` calls at each concurrency."""
    with mcp_servers(tree) as (_, url, token, pids):
        asyncio.run(_drive(url, token, "crm__lookup", 1, 50))  # connections, caches, the first commits
        results = {}
        for n in clients:
            before = _usage(pids["proxy"])
            latencies, _ = asyncio.run(_drive(url, token, "crm__lookup", n, calls))
            after = _usage(pids["proxy"])
            done = len(latencies) + n  # each client's warm-up call too
            per_call = {key: (after[key] - before[key]) / done for key in after}
            results[n] = {
                "cpu_ms": (per_call["user_s"] + per_call["sys_s"]) * 1000,
                "sys_ms": per_call["sys_s"] * 1000,
                "voluntary_cs": per_call["voluntary"],
                "involuntary_cs": per_call["involuntary"],
                "p50_ms": percentile(latencies, 0.5),
            }
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", type=Path, required=True, help="a checkout (repeat to compare)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--clients", default="1,8")
    options = parser.parse_args()
    clients = [int(n) for n in options.clients.split(",")]
    trees = [tree.resolve() for tree in options.tree]
    runs: dict[str, dict[int, list[dict[str, float]]]] = {str(t): {n: [] for n in clients} for t in trees}
    load = [os.getloadavg()[0]]
    for _ in range(options.rounds):
        for tree in trees:
            for n, measured in one_round(tree, clients, options.calls).items():
                runs[str(tree)][n].append(measured)
        load.append(os.getloadavg()[0])
    report: dict[str, Any] = {"bench": "mcp_proxy_cpu", "rounds": options.rounds, "calls": options.calls,
                              "load_avg_1m": [round(min(load), 2), round(max(load), 2)]}  # fmt: skip
    for tree, by_clients in runs.items():
        report[tree] = {
            f"clients_{n}": {
                key: {
                    "median": round(statistics.median(m[key] for m in measured), 3),
                    "range": [round(min(m[key] for m in measured), 3), round(max(m[key] for m in measured), 3)],
                }
                for key in measured[0]
            }
            for n, measured in by_clients.items()
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
