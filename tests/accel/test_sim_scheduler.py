"""The discrete-event scheduler against queueing theory and hand-worked schedules."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from agentcore.accel.errors import PlacementError, WorkloadError
from agentcore.accel.sim.models import resolve_model
from agentcore.accel.sim.profiles import DeviceProfile, Figure, load_catalog
from agentcore.accel.sim.report import summarise
from agentcore.accel.sim.scheduler import StreamState, run, served_latencies
from agentcore.accel.sim.service import ServiceCache
from agentcore.accel.sim.simulator import Simulator
from agentcore.accel.sim.workload import (
    PRESETS,
    BurstArrivals,
    PoissonArrivals,
    Stream,
    TraceArrivals,
    Workload,
    load_workload,
)

MODEL = "mlp-512x2"


def _one_core() -> DeviceProfile:
    chip = load_catalog().chips["trn2"]
    single = chip.model_copy(update={"neuron_cores": Figure(value=1, assumption="one-core test device")})
    return DeviceProfile(name="one-core", chip=single, chips=1)


def _workload(*streams: Stream, **policy: object) -> Workload:
    return Workload(streams=list(streams), **policy)  # type: ignore[arg-type]


def _service_time(service: ServiceCache, batch: int, max_batch: int) -> float:
    return float(service.table(resolve_model(MODEL), 1, "bf16", max_batch).seconds[batch])


def test_single_server_queue_matches_pollaczek_khinchine() -> None:
    """M/D/1: mean wait = rho * D / (2 (1 - rho)). An independent check of the event loop's clock."""
    service = ServiceCache(_one_core())
    d = _service_time(service, 1, 1)
    rate = 0.7 / d
    workload = _workload(
        Stream(model=MODEL, seq=1, arrivals=PoissonArrivals(rate=rate, requests=60_000)),
        max_batch=1, max_delay_ms=0, max_queue=60_000, seed=7,
    )  # fmt: skip
    report = summarise(run(workload, service), workload, service.profile)
    rho = rate * d
    assert report.mean_queue_ms / 1000 == pytest.approx(rho * d / (2 * (1 - rho)), rel=0.05)
    assert report.utilisation == pytest.approx(rho, rel=0.02)


def test_a_burst_is_cut_into_full_batches_back_to_back() -> None:
    service = ServiceCache(_one_core())
    workload = _workload(
        Stream(model=MODEL, seq=1, arrivals=BurstArrivals(size=100)), max_batch=32, max_delay_ms=5, max_queue=100
    )
    simulation = run(workload, service)
    (model,) = simulation.models
    assert [size for *_, size in model.batches] == [32, 32, 32, 4]
    full, last = _service_time(service, 32, 32), _service_time(service, 4, 32)
    assert [start for _, start, _, _ in model.batches[:3]] == pytest.approx([0, full, 2 * full])
    # the last 4 wait for company until the oldest has waited max_delay, then go
    assert model.batches[-1][1:3] == pytest.approx((0.005, 0.005 + last))


def test_max_delay_holds_a_batch_open_for_late_arrivals() -> None:
    service = ServiceCache(_one_core())
    workload = _workload(
        Stream(model=MODEL, seq=1, arrivals=TraceArrivals(times_s=[0.0, 0.0005, 0.010])),
        max_batch=4, max_delay_ms=2, max_queue=10,
    )  # fmt: skip
    (model,) = run(workload, service).models
    assert [(start, size) for _, start, _, size in model.batches] == [
        (pytest.approx(0.002), 2),
        (pytest.approx(0.012), 1),
    ]


def test_a_full_queue_rejects_and_counts_never_drops() -> None:
    service = ServiceCache(_one_core())
    workload = _workload(
        Stream(model=MODEL, seq=1, arrivals=BurstArrivals(size=100, bursts=3, interval_s=1.0)),
        max_batch=10, max_delay_ms=0, max_queue=50,
    )  # fmt: skip
    report = summarise(run(workload, service), workload, service.profile)
    assert report.rejected == 3 * 50 and report.completed == 3 * 50
    assert report.completed + report.rejected == report.requests


def test_higher_priority_is_served_first() -> None:
    service = ServiceCache(_one_core())
    workload = _workload(
        Stream(model=MODEL, seq=1, tenant="batch", arrivals=BurstArrivals(size=64)),
        Stream(model=MODEL, seq=1, tenant="interactive", priority=5, arrivals=BurstArrivals(size=64)),
        max_batch=32, max_delay_ms=0, max_queue=128,
    )  # fmt: skip
    low, high = run(workload, service).models[0].streams
    assert served_latencies(high)[2].max() < served_latencies(low)[2].min()


def test_equal_priorities_share_batches_by_tenant_weight() -> None:
    service = ServiceCache(_one_core())
    workload = _workload(
        Stream(model=MODEL, seq=1, tenant="gold", arrivals=BurstArrivals(size=400)),
        Stream(model=MODEL, seq=1, tenant="bronze", arrivals=BurstArrivals(size=400)),
        max_batch=40, max_delay_ms=0, max_queue=800, weights={"gold": 3, "bronze": 1},
    )  # fmt: skip
    gold, bronze = run(workload, service).models[0].streams
    first_batch_end = min(gold.served_end)
    assert (_served_in(gold, first_batch_end), _served_in(bronze, first_batch_end)) == (30, 10)


def _served_in(stream: StreamState, batch_end: float) -> int:
    """How many of the stream's requests rode in the batch that ended at ``batch_end``."""
    ranges = zip(stream.served_lo, stream.served_hi, stream.served_end, strict=True)
    return sum(hi - lo for lo, hi, end in ranges if end == batch_end)


def test_models_share_cores_by_hbm_bin_packing() -> None:
    workload = _workload(
        Stream(model="mlp-512x2", seq=1, arrivals=PoissonArrivals(rate=1000, requests=500)),
        Stream(model="mlp-1024x2", seq=1, tenant="b", arrivals=PoissonArrivals(rate=1000, requests=500)),
    )
    report = Simulator("trn2").run(workload)
    assert report.replicas == {"mlp-512x2": 8, "mlp-1024x2": 8}
    assert report.completed == 1000


def test_a_model_larger_than_a_core_is_a_placement_error() -> None:
    workload = _workload(Stream(model="mlp-65536x4", seq=1, arrivals=BurstArrivals(size=1)), precision="fp32")
    with pytest.raises(PlacementError, match=r"needs 64\.0\d GiB per replica .* has 12\.00 GiB"):
        Simulator("trn2.48xlarge").run(workload)


def test_every_request_is_served_or_rejected_in_the_bursty_preset() -> None:
    report = Simulator("trn2.48xlarge").run("bursty")
    assert report.completed + report.rejected == report.requests == 51_000
    assert set(report.tenants) == {"batch-jobs", "interactive"}
    assert report.tenants["interactive"].latency.p99_ms < report.tenants["batch-jobs"].latency.p99_ms
    assert 0 < report.utilisation <= 1 and report.usd > 0 and report.joules > 0
    assert all(0 <= busy <= 1 + 1e-9 for _, busy in report.timeline)


def test_a_million_requests_on_a_trn3_gen2_ultraserver() -> None:
    report = Simulator("trn3-ultraserver-gen2").run("scale-1m")
    assert report.completed == 1_000_000 and report.rejected == 0
    assert report.cores == 1152
    assert report.batches < report.completed / 10  # the loop ran over batches, not arrivals


@pytest.mark.parametrize(
    "bad",
    [
        {"streams": [{"model": MODEL, "arrivals": {"kind": "poisson", "rate": -5, "requests": 10}}]},
        {"streams": [{"model": MODEL, "arrivals": {"kind": "burst", "size": 0}}]},
        {"streams": []},
        {"streams": [{"model": MODEL, "arrivals": {"kind": "burst", "size": 1}}], "max_batch": 64, "max_queue": 8},
        {"streams": [{"model": MODEL, "arrivals": {"kind": "trace"}}]},
    ],
)
def test_impossible_workloads_are_validation_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Workload.model_validate(bad)


def test_workloads_load_from_presets_and_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert load_workload("compute-bound") is PRESETS["compute-bound"]
    trace = tmp_path / "trace.txt"
    trace.write_text("0.3\n0.1\n0.2\n")
    spec = tmp_path / "w.toml"
    spec.write_text(f'[[streams]]\nmodel = "{MODEL}"\narrivals = {{ kind = "trace", file = "{trace}" }}\n')
    loaded = load_workload(str(spec))
    assert np.allclose(loaded.arrival_times()[0], [0.1, 0.2, 0.3])
    with pytest.raises(WorkloadError, match="not a preset"):
        load_workload("nope")
