"""bench/gateway.py still runs against this gateway: its peers patch gateway internals (the stateful peer replaces
``AuditLog.can_join``), so a changed signature failed the whole benchmark with nobody noticing. Tiny call counts,
no timing assertions: only that every setting runs, decides and keeps its audit chain intact."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gateway.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gateway", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses and pickles look their module up
    spec.loader.exec_module(module)
    return module


def test_every_setting_of_the_benchmark_runs_on_this_gateway() -> None:
    bench = _bench()
    settings = bench.in_process(40, rounds=2)
    assert len(settings) == 6 and all(s["calls"] == 40 and s["p50_us"] > 0 for s in settings)
    stateful = bench.stateful_commits(40, rounds=2)
    assert stateful["calls"] == 40 and stateful["joined_vs_separate_cpu"] > 0
    assert bench.telemetry(40, rounds=2)["calls"] == 40
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bench.policy").write_text(bench.bundle())
        gw = bench._gateway(Path(tmp), Path(tmp) / "threads.db")
        latencies, _ = bench._threads(bench._gateway_call(gw), 4, 0.2)
        assert latencies and gw.audit.verify().ok
        gw.close()
