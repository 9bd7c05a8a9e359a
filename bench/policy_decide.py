"""Policy decisions per second: agentcore's compiled engine versus cedarpy (Rust Cedar) on the equivalent bundle.

1,000 rules over 100 tools (allow/deny/approval rules with numeric, set, text and role conditions), 100,000
random requests; the same requests go to both engines in one run and every decision is asserted identical
(agentcore ALLOW <=> Cedar Allow; the Cedar bundle is agentcore's own export). cedarpy gets its best
configuration: pre-parsed ``PolicySet`` and ``Entities`` handles, dict-form entity UIDs, the policy set
partitioned per tool, one call per request and also its batch API (requests grouped per tool). The naive
configuration (one pre-parsed set of all 1,000 policies) is timed on a 2,000-request subset.

Each measurement is the fastest of three passes over the same requests, for both engines alike. Times are this
thread's CPU time (``time.thread_time_ns``), so a machine shared with other work does not charge
its waiting to either engine; wall-clock rates are printed too. Prints ONE JSON line: decisions per CPU-second
and p50/p99 µs of each, and the ratios. Needs cedarpy (the `bench` extra).
Usage: python bench/policy_decide.py [--requests 100000] [--seed 7]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import cedarpy

from agentcore import Effect, PolicyEngine, Request
from agentcore.policies import AgentInfo, Principal, RequestContext
from agentcore.policies.cedar import cedar_request, export

TOOLS = [f"svc{t // 10}.tool{t:02d}" for t in range(100)]
ROLES = [f"role{r}" for r in range(8)]
CATEGORIES = ["books", "games", "tools", "food", "toys", "music"]
REPEATS = 3


def bundle(rng: random.Random) -> str:
    """Ten rules per tool, in the shapes real bundles use."""
    lines = []
    for tool in TOOLS:
        r = [rng.choice(ROLES) for _ in range(4)]
        n = [rng.randrange(500, 3000), rng.randrange(200, 3000), rng.randrange(2500, 5000), rng.randrange(1500, 4000)]
        cats = rng.sample(CATEGORIES, 3)
        lines += [
            f'allow {tool} for users with role "{r[0]}" when amount is at most {n[0]}.',
            f'allow {tool} for users with role "{r[1]}" when category is one of "{cats[0]}", "{cats[1]}".',
            f'allow {tool} when user has role "{r[2]}" and amount is between {n[1] // 2} and {n[1]}.',
            f'deny {tool} when amount is more than {n[2]} and user does not have role "{r[3]}".',
            f'deny {tool} when customer.status is present and customer.status is "flagged".',
            f'deny {tool} when recipient is present and recipient does not end with "@example.com".',
            f'require approval from role "{r[3]}" for {tool} when amount is more than {n[3]}.',
            f'deny {tool} for agent "bot{rng.randrange(20)}" when urgent is true.',
            f'allow {tool} for users with role "{r[1]}" when category is "{cats[2]}" and amount is less than 100.',
            f'deny {tool} when category is "{rng.choice(CATEGORIES)}" and quantity exceeds {rng.randrange(5, 50)}.',
        ]
    return "\n".join(lines)


def users(rng: random.Random) -> dict[str, list[str]]:
    return {f"user{u:03d}": sorted(rng.sample(ROLES, rng.randrange(1, 6))) for u in range(200)}


def requests(rng: random.Random, pool: dict[str, list[str]], count: int) -> list[Request]:
    names = sorted(pool)
    made = []
    for _ in range(count):
        user = rng.choice(names)
        args: dict[str, object] = {"amount": rng.randrange(0, 3000), "category": rng.choice(CATEGORIES),
                                   "quantity": rng.randrange(0, 60), "urgent": rng.random() < 0.2}  # fmt: skip
        if rng.random() < 0.5:
            args["customer"] = {"status": rng.choice(["flagged", "ok", "new"])}
        if rng.random() < 0.5:
            args["recipient"] = rng.choice(["a@example.com", "b@example.com", "c@evil.com"])
        made.append(Request(
            principal=Principal(id=user, roles=frozenset(pool[user])), agent=AgentInfo(id=f"bot{rng.randrange(20)}"),
            action=rng.choice(TOOLS), args=args, context=RequestContext(session_id="s", tenant="t"),
        ))  # fmt: skip
    return made


def timed(calls: list[Any], fn: Callable[[Any], Any]) -> tuple[list[Any], list[float]]:
    """Results and per-call latencies (µs) of fn over calls: the fastest of REPEATS passes (like timeit)."""
    passes = []
    clock = time.thread_time_ns
    for _ in range(REPEATS):
        results, latencies = [], []
        for call in calls:
            start = clock()
            results.append(fn(call))
            latencies.append((clock() - start) / 1000)
        passes.append((sum(latencies), results, latencies))
    _, results, latencies = min(passes, key=lambda p: p[0])
    return results, latencies


def best(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, CPU seconds, wall seconds) of the fastest of REPEATS runs of fn()."""
    runs = []
    for _ in range(REPEATS):
        start, wall = time.thread_time(), time.perf_counter()
        result = fn()
        runs.append((time.thread_time() - start, time.perf_counter() - wall, result))
    cpu, wall, result = min(runs, key=lambda r: r[0])
    return result, cpu, wall


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    engine = PolicyEngine.from_text(bundle(rng), "bench.policy")
    pool = users(rng)
    batch = requests(rng, pool, options.requests)
    exported = export(engine.files, TOOLS)
    assert not exported.skipped and len(exported.policies) == 1000
    entities = cedarpy.Entities.from_json_str(json.dumps([cedar_request(Request(
        principal=Principal(id=u, roles=frozenset(r)), action="x"))[1] for u, r in pool.items()]))  # fmt: skip
    full = cedarpy.PolicySet.from_str(exported.text)
    per_tool = {
        tool: cedarpy.PolicySet.from_str("\n\n".join(p.text for p in exported.policies if tool in (p.tools or (tool,))))
        for tool in TOOLS
    }
    cedar_calls = [(r.action, cedar_request(r)[0]) for r in batch]
    gc.collect()
    gc.disable()

    decide = engine.decide
    engine.decide_many(batch[:2000])  # warm the plan and decision caches like a running gateway
    ours, our_latency = timed(batch, decide)
    ours_batch, ours_batch_s, ours_wall_s = best(lambda: engine.decide_many(batch))

    cedar, cedar_latency = timed(cedar_calls, lambda c: cedarpy.is_authorized(c[1], per_tool[c[0]], entities).allowed)
    groups: dict[str, list[int]] = defaultdict(list)
    for index, (tool, _) in enumerate(cedar_calls):
        groups[tool].append(index)

    def cedar_batched() -> list[bool]:
        allowed = [False] * len(batch)
        for tool, indexes in groups.items():
            results = cedarpy.is_authorized_batch([cedar_calls[i][1] for i in indexes], per_tool[tool], entities)
            for i, result in zip(indexes, results, strict=True):
                allowed[i] = result.allowed
        return allowed

    cedar_batch, cedar_batch_s, cedar_wall_s = best(cedar_batched)
    subset = cedar_calls[:2000]
    naive, naive_latency = timed(subset, lambda c: cedarpy.is_authorized(c[1], full, entities).allowed)
    gc.enable()

    allowed = [d.effect is Effect.ALLOW for d in ours]
    assert allowed == [d.effect is Effect.ALLOW for d in ours_batch] == cedar == cedar_batch, "decisions differ"
    assert allowed[: len(naive)] == naive, "naive cedar decisions differ"
    ours_rate = len(batch) / (sum(our_latency) / 1e6)
    cedar_rate = len(batch) / (sum(cedar_latency) / 1e6)
    cedar_batch_rate = len(batch) / cedar_batch_s
    ours_batch_rate = len(batch) / ours_batch_s
    print(json.dumps({
        "bench": "policy_decide", "rules": 1000, "tools": len(TOOLS), "requests": len(batch),
        "allowed_share": round(sum(allowed) / len(allowed), 3),
        "effects": {e.value: sum(d.effect is e for d in ours) for e in Effect},
        "agentcore": {"decisions_per_s": round(ours_rate), "p50_us": percentile(our_latency, 0.5),
                      "p99_us": percentile(our_latency, 0.99), "batch_decisions_per_s": round(ours_batch_rate),
                      "batch_wall_clock_per_s": round(len(batch) / ours_wall_s)},
        "cedarpy": {"version": cedarpy.__version__ if hasattr(cedarpy, "__version__") else "4.12",
                    "naive_preparsed_per_s": round(len(subset) / (sum(naive_latency) / 1e6)),
                    "partitioned_per_s": round(cedar_rate), "p50_us": percentile(cedar_latency, 0.5),
                    "p99_us": percentile(cedar_latency, 0.99), "partitioned_batch_per_s": round(cedar_batch_rate),
                    "batch_wall_clock_per_s": round(len(batch) / cedar_wall_s)},
        "ratio_single_call": round(ours_rate / cedar_rate, 1),
        "ratio_batch": round(ours_batch_rate / cedar_batch_rate, 1),
        "identical_decisions": True,
        "clock": "thread CPU time",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
                   f"Python {platform.python_version()}",
    }))  # fmt: skip


if __name__ == "__main__":
    main()
