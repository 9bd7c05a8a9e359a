"""Gateway overhead: (a) in-process call path with a 1,000-rule bundle and the audit on, (b) throughput as callers
are added, (c) MCP proxy vs direct, (d) OpenTelemetry spans and metrics enabled vs disabled.

Prints ONE JSON line. (a) compares ``gw.call`` against calling the function directly, per call (wall time, and the
CPU time per call, which a busy machine does not inflate), for the default (crash-safe) durability and the
power-loss-safe one; every setting commits the allow decision before the tool runs (with the stateful rule, together
with the call's reservation in the state section). By default the outcome is committed before the call returns (two
commits per call, DESIGN.md §8.2); each setting also runs with ``outcome_delay_s=0.005``, the opt-in where the
outcome rides in the next commit (the next call's decision, or the audit's flusher within 5 ms): one commit per
call, but a refused outcome is no longer the caller's error. Each setting's ``commits`` says which. (b) runs the
default setting with 1, 4 and 16 threads sharing one gateway, and 1 and 4 processes sharing one SQLite database (4
also without the writer lock, as its peer), for a fixed time each; besides calls/s it reports the CPU time per call
(all threads or processes together: the work done, where wall time also counts the waits for a shared machine's
CPUs) and how many audit records each commit carried (concurrent callers share commits); its ``ceilings`` run,
beside them, CPU-bound Python with no waits on the same thread counts and four processes each on its own database
file: what the interpreter and the machine allow any code. (c) runs a real upstream MCP server (streamable HTTP) and
the gateway proxy in front of it, and drives both with the official MCP client at 1, 8 and 32 concurrent clients:
the added p50 also as a share of the direct p50 (the goal: below 1, less than one direct round trip), and the CPU
time per proxied call of the proxy and of the upstream server.

(d) runs the default setting three ways, interleaved: no telemetry configured (the default), the SDK's tracer
(batch span processor; the exporter discards) and its meter (an in-memory reader) given to the gateway; it also
times the disabled check alone (what every call pays when nothing is configured).

(e) ``stateful_commits`` runs the stateful setting with its allow decision committed in the state section
against the same gateway committing it separately (the peer), interleaved.

    python bench/gateway.py [--calls 5000] [--seconds 3] [--mcp-calls 300] [--skip-mcp] [--skip-throughput]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-secret-" + "s" * 32


def bundle(tools: int = 100, per_tool: int = 10) -> str:
    """1,000 stateless rules over 100 tools: role allows, argument denies, approvals, redactions."""
    lines = ['policy "bench" version 1 owner "bench"']
    for t in range(tools):
        name = f"svc{t}.op"
        for r in range(per_tool):
            kind = r % 4
            if kind == 0:
                lines.append(f'allow {name} for users with role "role{r}" when amount is at most {100 * (r + 1)}.')
            elif kind == 1:
                lines.append(f'deny {name} when customer starts with "blocked-{r}".')
            elif kind == 2:
                lines.append(f'require approval from role "manager" for {name} when amount is more than {5000 + r}.')
            else:
                lines.append(f'deny {name} when region is one of "r{r}a", "r{r}b".')
    return "\n".join(lines) + "\n"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


DEFERRED = "started before the tool runs; outcome with the next call's commit (or the flusher's, within 5 ms)"
COMMITTED = "started before the tool runs; outcome before the call returns"
IN_PROCESS_SETTINGS: tuple[dict[str, Any], ...] = (  # the default first: crash-safe, plain SHA-256 chain
    {"durability": "process", "outcome_delay_s": 0, "stateful": False, "keyed": False, "commits": COMMITTED},
    {"durability": "process", "outcome_delay_s": 0.005, "stateful": False, "keyed": False, "commits": DEFERRED},
    {"durability": "power", "outcome_delay_s": 0, "stateful": False, "keyed": False, "commits": COMMITTED},
    {"durability": "power", "outcome_delay_s": 0.005, "stateful": False, "keyed": False, "commits": DEFERRED},
    {  # started in the state section's commit, with the reservation
        "durability": "process",
        "outcome_delay_s": 0,
        "stateful": True,
        "keyed": False,
        "commits": "started with the reservation before the tool runs; outcome before the call returns",
    },
    {"durability": "process", "outcome_delay_s": 0, "stateful": False, "keyed": True, "commits": COMMITTED},
)
AUDIT_KEY = "bench:" + "k" * 40
# added for the stateful setting: decided twice, the second time inside the state section, and reserved there
# in the transaction that also commits the allow decision
STATEFUL_RULE = "deny svc7.op when sum of amount over svc7.op in the last 1 hour per user plus amount exceeds 10000.\n"
ARGS = {"customer": "c-42", "amount": 50.0, "region": "eu"}
WHO = {"id": "alice", "roles": ["role0"]}


def op(customer: str, amount: float, region: str = "eu") -> dict[str, Any]:
    return {"customer": customer, "amount": amount}


def in_process(calls: int, rounds: int = 20) -> list[dict[str, Any]]:
    """Every setting gets ``calls`` calls, in ``rounds`` interleaved blocks: a slow spell of a shared machine
    then falls on all settings alike instead of on whichever happened to run during it."""
    from agentcore import Gateway
    from agentcore.gateway import ChainKeys

    args, who = ARGS, WHO
    clock = time.perf_counter_ns
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bench.policy").write_text(bundle())
        (Path(tmp) / "stateful.policy").write_text(bundle() + STATEFUL_RULE)
        gateways = []
        for n, setting in enumerate(IN_PROCESS_SETTINGS):
            policy = Path(tmp) / ("stateful.policy" if setting["stateful"] else "bench.policy")
            gw = Gateway(
                policy,
                database=str(Path(tmp) / f"bench{n}.db"),
                durability=setting["durability"],
                outcome_delay_s=setting["outcome_delay_s"],
                audit_key=ChainKeys.parse(AUDIT_KEY, "bench") if setting["keyed"] else None,
            )
            gw.tool(op, name="svc7.op")
            for _ in range(200):  # warm up: plans cached, connection open
                gw.call("svc7.op", args, principal=who)
            gateways.append(gw)
        direct: list[list[int]] = [[] for _ in gateways]
        gated: list[list[int]] = [[] for _ in gateways]
        cpu = [0.0 for _ in gateways]  # CPU seconds of each setting's blocks (direct calls included, ~1 µs each)
        for _ in range(rounds):
            for n, gw in enumerate(gateways):
                cpu[n] -= time.process_time()
                for i in range(max(1, calls // rounds)):
                    caller = {"id": f"user{i}", "roles": ["role0"]}  # short histories: the section, not the scan
                    start = clock()
                    op(**args)
                    direct[n].append(clock() - start)
                    start = clock()
                    gw.call("svc7.op", args, principal=caller if IN_PROCESS_SETTINGS[n]["stateful"] else who)
                    gated[n].append(clock() - start)
                cpu[n] += time.process_time()
        for gw in gateways:
            assert gw.audit.verify().ok
            gw.close()
    results = []
    for setting, base_ns, gated_ns, cpu_s in zip(IN_PROCESS_SETTINGS, direct, gated, cpu, strict=True):
        base = statistics.median(base_ns)
        overhead = [(g - base) / 1000 for g in gated_ns]
        results.append(
            {
                **setting,
                "calls": len(gated_ns),
                "p50_us": round(percentile(overhead, 0.50), 1),
                "p99_us": round(percentile(overhead, 0.99), 1),
                "direct_p50_us": round(base / 1000, 2),
                "cpu_us_per_call": round(cpu_s / len(gated_ns) * 1e6, 1),  # the work, whatever the load
            }
        )
    return results


def stateful_commits(calls: int, rounds: int = 20) -> dict[str, Any]:
    """The stateful default with its ``started`` record committed in the state section's transaction (two commits
    per call: the section's, the outcome's) against the same gateway committing it on its own after the section
    (three, the peer), interleaved in one process: per-call wall p50 and the CPU time per call of each."""
    from agentcore import Gateway

    clock = time.perf_counter_ns
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "stateful.policy").write_text(bundle() + STATEFUL_RULE)
        gateways = {}
        for name in ("joined", "separate"):
            gw = Gateway(Path(tmp) / "stateful.policy", database=str(Path(tmp) / f"{name}.db"))
            if name == "separate":
                gw.audit.can_join = lambda subject, tenant: False  # type: ignore[method-assign]  # the path before
            gw.tool(op, name="svc7.op")
            for i in range(200):
                gw.call("svc7.op", ARGS, principal={"id": f"user{i}", "roles": ["role0"]})
            gateways[name] = gw
        wall: dict[str, list[int]] = {name: [] for name in gateways}
        cpu = dict.fromkeys(gateways, 0.0)
        for _ in range(rounds):
            for name, gw in gateways.items():
                cpu[name] -= time.process_time()
                for i in range(max(1, calls // rounds)):
                    start = clock()
                    gw.call("svc7.op", ARGS, principal={"id": f"user{i}", "roles": ["role0"]})
                    wall[name].append(clock() - start)
                cpu[name] += time.process_time()
        for gw in gateways.values():
            assert gw.audit.verify().ok
            gw.close()
    result: dict[str, Any] = {}
    for name, values in wall.items():
        result[f"{name}_p50_us"] = round(statistics.median(values) / 1000, 1)
        result[f"{name}_cpu_us_per_call"] = round(cpu[name] / len(values) * 1e6, 1)
    result["joined_vs_separate_cpu"] = round(cpu["joined"] / cpu["separate"], 3)
    result["calls"] = len(wall["joined"])
    return result


def telemetry(calls: int, rounds: int = 20) -> dict[str, Any]:
    """Per-call gateway time with telemetry off, spans on, and spans plus metrics on (same bundle, interleaved)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from agentcore import Gateway

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Discard()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    settings = {
        "disabled": {},
        "traces": {"tracer_provider": tracer_provider},
        "traces_and_metrics": {"tracer_provider": tracer_provider, "meter_provider": meter_provider},
    }
    clock = time.perf_counter_ns
    timings: dict[str, list[int]] = {name: [] for name in settings}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bench.policy").write_text(bundle())
        gateways = {}
        for name, providers in settings.items():
            gw = Gateway(Path(tmp) / "bench.policy", database=str(Path(tmp) / f"{name}.db"), **providers)
            gw.tool(op, name="svc7.op")
            for _ in range(200):
                gw.call("svc7.op", ARGS, principal=WHO)
            gateways[name] = gw
        for _ in range(rounds):
            for name, gw in gateways.items():
                for _ in range(max(1, calls // rounds)):
                    start = clock()
                    gw.call("svc7.op", ARGS, principal=WHO)
                    timings[name].append(clock() - start)
        check = gateways["disabled"].telemetry
        start = clock()
        for _ in range(100_000):
            check.tool_call("svc7.op", None)
        disabled_check_ns = (clock() - start) / 100_000
        for gw in gateways.values():
            gw.close()
    tracer_provider.shutdown()
    meter_provider.shutdown()
    p50 = {name: statistics.median(values) / 1000 for name, values in timings.items()}
    return {
        **{f"{name}_p50_us": round(value, 1) for name, value in p50.items()},
        **{f"{name}_p99_us": round(percentile(values, 0.99) / 1000, 1) for name, values in timings.items()},
        "traces_vs_disabled_p50": round(p50["traces"] / p50["disabled"], 3),
        "traces_and_metrics_vs_disabled_p50": round(p50["traces_and_metrics"] / p50["disabled"], 3),
        "disabled_check_ns": round(disabled_check_ns, 1),
        "calls": len(timings["disabled"]),
    }


def _loop(call: Any, until: float, latencies: list[float]) -> None:
    """Call until the deadline (a shared one: every caller measures the same stretch of time)."""
    clock = time.perf_counter
    while (start := clock()) < until:
        call()
        latencies.append(clock() - start)


def _gateway_call(gw: Any) -> Any:
    return lambda: gw.call("svc7.op", ARGS, principal=WHO)


def _python_work() -> None:
    """CPU-bound Python that never releases the GIL: what threads can make of work without any waits."""
    for _ in range(4):
        json.dumps(_PAYLOAD, sort_keys=True)


_PAYLOAD = {"customer": "c-42", "amount": 50.0, "items": list(range(20))}


def _summary(latencies: list[float], seconds: float, cpu_s: float, commits: tuple[int, int]) -> dict[str, Any]:
    """``commits``: (batches committed, records in them) by the audit's group commit."""
    return {
        "calls_per_s": round(len(latencies) / seconds),
        "p50_us": round(percentile(latencies, 0.5) * 1e6, 1),
        "p99_us": round(percentile(latencies, 0.99) * 1e6, 1),
        "cpu_us_per_call": round(cpu_s / max(1, len(latencies)) * 1e6, 1),
        "records_per_commit": round(commits[1] / max(1, commits[0]), 2),
    }


def _commits(gw: Any) -> tuple[int, int]:
    return gw.audit._group.batches, gw.audit._group.items


def _gateway(folder: Path, database: Path) -> Any:
    from agentcore import Gateway

    gw = Gateway(folder / "bench.policy", database=str(database))
    gw.tool(op, name="svc7.op")
    call = _gateway_call(gw)
    for _ in range(200):  # warm up: plans cached, connection open
        call()
    return gw


def worker(folder: str, database: str, start: float, seconds: float, writer_lock: bool) -> None:
    """One process of the multi-process run: prints its latencies (seconds), CPU time and commits as JSON.
    Without ``writer_lock`` its writers wait in SQLite's busy handler, as before the lock existed (the peer)."""
    gw = _gateway(Path(folder), Path(database))
    if not writer_lock:
        gw.db.writers = None
    latencies: list[float] = []
    time.sleep(max(0.0, start - time.time()))
    cpu, commits = time.process_time(), _commits(gw)
    _loop(_gateway_call(gw), time.perf_counter() + seconds, latencies)
    cpu, after = time.process_time() - cpu, _commits(gw)
    gw.close()
    made = [b - a for a, b in zip(commits, after, strict=True)]
    print(json.dumps({"latencies": latencies, "cpu_s": cpu, "commits": made}))


def _threads(call: Any, n: int, seconds: float) -> tuple[list[float], float]:
    """Latencies of ``n`` threads calling ``call`` for ``seconds``, and the process's CPU time meanwhile."""
    per_thread: list[list[float]] = [[] for _ in range(n)]
    until = time.perf_counter() + seconds
    cpu = time.process_time()
    threads = [threading.Thread(target=_loop, args=(call, until, lat)) for lat in per_thread]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [x for lat in per_thread for x in lat], time.process_time() - cpu


def _processes(folder: Path, databases: list[Path], seconds: float, lock: str) -> dict[str, Any]:
    """One worker process per database path (a path may repeat: processes sharing a file), started together."""
    start = time.time() + 3 + len(databases)  # after every interpreter has started and warmed up
    argvs = [
        [sys.executable, __file__, "--worker", str(folder), str(db), str(start), str(seconds), lock] for db in databases
    ]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for argv in argvs]
    runs = [json.loads(proc.communicate(timeout=300)[0]) for proc in procs]
    latencies = [x for run in runs for x in run["latencies"]]
    commits = (sum(run["commits"][0] for run in runs), sum(run["commits"][1] for run in runs))
    return _summary(latencies, seconds, sum(run["cpu_s"] for run in runs), commits)


def throughput(seconds: float) -> dict[str, Any]:
    """Calls/s of the default setting as callers are added: threads on one gateway, processes on one database.

    ``ceilings`` measures, in the same run, what this interpreter and machine allow any code: the same thread
    counts running CPU-bound Python with no waits (under the GIL, added threads only add switching), and four
    processes each on its own database file (nothing shared: on 2 vCPUs at most twice one process)."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bench.policy").write_text(bundle())
        gw = _gateway(folder, folder / "threads.db")
        python_work: dict[int, int] = {}
        for n in (1, 4, 16):
            commits = _commits(gw)
            latencies, cpu = _threads(_gateway_call(gw), n, seconds)
            after = _commits(gw)
            results[f"threads_{n}"] = _summary(latencies, seconds, cpu, (after[0] - commits[0], after[1] - commits[1]))
            python_work[n] = len(_threads(_python_work, n, seconds)[0])
        assert gw.audit.verify().ok
        gw.close()
        shared = folder / "processes.db"
        own = [folder / f"own-{i}.db" for i in range(4)]
        for database in (shared, *own):
            _gateway(folder, database).close()  # the schema, once
        results["processes_1"] = _processes(folder, [shared], seconds, "lock")
        results["processes_4"] = _processes(folder, [shared] * 4, seconds, "lock")
        results["processes_4_without_writer_lock"] = _processes(folder, [shared] * 4, seconds, "nolock")
        results["processes_4_own_databases"] = _processes(folder, own, seconds, "lock")
    one_thread, one_process = results["threads_1"]["calls_per_s"], results["processes_1"]["calls_per_s"]
    results["ratios"] = {
        "threads_4_vs_1": round(results["threads_4"]["calls_per_s"] / one_thread, 2),
        "threads_16_vs_1": round(results["threads_16"]["calls_per_s"] / one_thread, 2),
        "processes_4_vs_1": round(results["processes_4"]["calls_per_s"] / one_process, 2),
        "processes_4_without_writer_lock_vs_1": round(
            results["processes_4_without_writer_lock"]["calls_per_s"] / one_process, 2
        ),
    }
    results["ceilings"] = {
        "python_work_threads_4_vs_1": round(python_work[4] / python_work[1], 2),
        "python_work_threads_16_vs_1": round(python_work[16] / python_work[1], 2),
        "processes_4_own_databases_vs_1": round(results["processes_4_own_databases"]["calls_per_s"] / one_process, 2),
    }
    return results


def python_speed_us() -> float:
    """A fixed pure-Python workload (median of 200 runs), to compare how fast the machine was across runs."""
    samples = []
    for _ in range(200):
        start = time.perf_counter_ns()
        for _ in range(5):
            _python_work()
        samples.append(time.perf_counter_ns() - start)
    return round(statistics.median(samples) / 1000, 1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited early")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(port)


async def _drive(url: str, token: str | None, tool: str, clients: int, calls: int) -> tuple[list[float], float]:
    """``clients`` concurrent official MCP clients make ``calls`` calls in all: (latencies in ms, seconds)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []

    async def one_client(n: int) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http), cache=None) as client,
        ):
            await client.call_tool(tool, {"customer_id": "warm"})
            for i in range(n):
                start = time.perf_counter()
                result = await client.call_tool(tool, {"customer_id": f"c{i}"})
                latencies.append((time.perf_counter() - start) * 1000)
                assert not result.is_error, result

    per_client = max(1, calls // clients)
    start = time.perf_counter()
    await asyncio.gather(*(one_client(per_client) for _ in range(clients)))
    return latencies, time.perf_counter() - start


def _cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) a process has used, from /proc; None where there is no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _compare(
    direct_url: str, proxy_url: str, token: str, clients: int, calls: int, pids: dict[str, int], rounds: int = 3
) -> dict[str, Any]:
    """Direct and proxied calls in alternating blocks (so a slow spell of the machine hits both), pooled; with the
    CPU time per call the upstream server and the proxy used in the proxied blocks (the work, whatever the load)."""
    runs: dict[str, tuple[list[float], float]] = {"direct": ([], 0.0), "proxy": ([], 0.0)}
    cpu = dict.fromkeys(pids, 0.0)
    proxied = 0
    for _ in range(rounds):
        for name, url, bearer, tool in (
            ("direct", direct_url, None, "lookup"),
            ("proxy", proxy_url, token, "crm__lookup"),
        ):
            before = {process: _cpu_s(pid) for process, pid in pids.items()}
            latencies, seconds = asyncio.run(_drive(url, bearer, tool, clients, max(clients, calls // rounds)))
            runs[name] = (runs[name][0] + latencies, runs[name][1] + seconds)
            if name == "proxy":
                proxied += len(latencies) + clients  # each client's warm-up call too
                for process, pid in pids.items():
                    start, end = before[process], _cpu_s(pid)
                    cpu[process] += end - start if start is not None and end is not None else float("nan")
    summary = {
        name: {
            "p50_ms": round(percentile(latencies, 0.5), 3),
            "p99_ms": round(percentile(latencies, 0.99), 3),
            "calls_per_s": round(len(latencies) / seconds, 1),
        }
        for name, (latencies, seconds) in runs.items()
    }
    added = summary["proxy"]["p50_ms"] - summary["direct"]["p50_ms"]
    return {
        **summary,
        "added_p50_ms": round(added, 3),
        "added_p99_ms": round(summary["proxy"]["p99_ms"] - summary["direct"]["p99_ms"], 3),
        "added_vs_direct_p50": round(added / summary["direct"]["p50_ms"], 3),  # the goal: below 1
        **{f"{process}_cpu_ms_per_call": round(cpu_s / proxied * 1000, 3) for process, cpu_s in cpu.items()},
    }


@contextlib.contextmanager
def mcp_servers(tree: Path = ROOT) -> Iterator[tuple[str, str, str, dict[str, int]]]:
    """The test upstream server and a proxy in front of it (HTTP, a bearer JWT, one allow rule), both running the
    code of checkout ``tree``: (direct URL, proxy URL, the token, their pids) until the block ends."""
    import jwt

    upstream_script = tree / "tests" / "gateway" / "mcp_upstream.py"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "p.policy").write_text('policy "b"\nallow crm.lookup for users with role "support".\n')
        config = Path(tmp) / "gateway.toml"
        up_port, gw_port = _free_port(), _free_port()
        config.write_text(
            f'[gateway]\npolicies = ["p.policy"]\ndatabase = "{Path(tmp) / "gw.db"}"\n'
            '[gateway.auth]\nalgorithms = ["HS256"]\nsecret_env = "BENCH_GW_SECRET"\n'
            f'[[gateway.targets]]\nname = "crm"\nurl = "http://127.0.0.1:{up_port}/mcp"\n'
        )
        path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "BENCH_GW_SECRET": SECRET, "PYTHONPATH": path}  # the checkout's agentcore first
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
        upstream = subprocess.Popen([sys.executable, str(upstream_script), str(up_port)], **quiet)  # type: ignore[call-overload]
        cli = [str(Path(sys.executable).parent / "agentcore"), "gateway", "serve", "--config", str(config)]
        proxy = None
        try:
            _wait(up_port, upstream)
            proxy = subprocess.Popen([*cli, "--transport", "http", "--port", str(gw_port)], **quiet)  # type: ignore[call-overload]
            _wait(gw_port, proxy)
            token = jwt.encode({"sub": "bench", "roles": ["support"], "exp": int(time.time()) + 3600}, SECRET)
            direct_url, proxy_url = f"http://127.0.0.1:{up_port}/mcp", f"http://127.0.0.1:{gw_port}/mcp"
            yield direct_url, proxy_url, token, {"proxy": proxy.pid, "upstream": upstream.pid}
        finally:
            for proc in (proxy, upstream):
                if proc is not None:
                    proc.terminate()
                    proc.wait(timeout=10)


def mcp_proxy(calls: int) -> dict[str, Any]:
    with mcp_servers() as (direct_url, proxy_url, token, pids):
        return {f"clients_{n}": _compare(direct_url, proxy_url, token, n, calls, pids) for n in (1, 8, 32)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--mcp-calls", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each throughput run")
    parser.add_argument("--skip-mcp", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-telemetry", action="store_true")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)  # one process of the multi-process run
    options = parser.parse_args()
    if options.worker:
        folder, database, start, seconds, lock = options.worker
        worker(folder, database, float(start), float(seconds), writer_lock=lock == "lock")
        return
    report: dict[str, Any] = {
        "bench": "gateway",
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m_at_start": round(os.getloadavg()[0], 2),  # other work on the machine inflates tails
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "rules": 1000,
        "python_speed_us_at_start": python_speed_us(),  # the same work takes longer when the host is busy
        "in_process": in_process(options.calls),
        "targets": {
            "in_process_p50_us": 100,
            "in_process_p99_us": 350,
            "threads_4_and_16_vs_1": 1.0,
            "processes_4_vs_1": 2.0,
            "mcp_added_p50_ms": 2,
            "mcp_added_vs_direct_p50": 1.0,  # the proxy adds less than one direct SDK round trip
        },
    }
    report["stateful_commits"] = stateful_commits(options.calls)
    if not options.skip_telemetry:
        report["telemetry"] = telemetry(options.calls)
    if not options.skip_throughput:
        report["throughput"] = throughput(options.seconds)
    if not options.skip_mcp:
        report["mcp_proxy"] = mcp_proxy(options.mcp_calls)
    report["python_speed_us_at_end"] = python_speed_us()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
