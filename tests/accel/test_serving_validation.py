"""The LLM serving model against published results and AWS's Trn3-vs-Trn2 claims (all simulated)."""

from __future__ import annotations

import pytest

from agentcore.accel.serving.catalogue import LLMCatalogue, load_llms
from agentcore.accel.serving.costmodel import Layout, ReplicaCost
from agentcore.accel.serving.simulation import Requests, ServingReport, simulate
from agentcore.accel.serving.validation import validation_table
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog
from agentcore.accel.sim.workload import BurstArrivals

TOLERANCE = 0.25


@pytest.fixture(scope="module")
def profiles() -> ProfileCatalog:
    return load_catalog()


@pytest.fixture(scope="module")
def llms() -> LLMCatalogue:
    return load_llms()


def test_published_serving_results_are_reproduced_within_25_percent(
    profiles: ProfileCatalog, llms: LLMCatalogue
) -> None:
    rows = validation_table(profiles, llms)
    checked = [row for row in rows if row.known_gap is None]
    misses = {row.key: f"{row.error:+.1%}" for row in checked if abs(row.error) > TOLERANCE}
    assert not misses, f"outside +-25%: {misses}"
    held_out = {(row.source, row.device, row.model) for row in checked if not row.fitted}
    assert len(held_out) >= 3, "at least three independent published points must be held out (not fitted)"
    for row in rows:
        if row.known_gap is not None:  # a documented miss stays documented: if the model moves, update the note
            assert TOLERANCE < row.error < 0.8, f"{row.key}: {row.error:+.1%} no longer matches its known_gap note"


def _system_run(
    profiles: ProfileCatalog, llms: LLMCatalogue, system: str, layout: Layout, requests: Requests
) -> tuple[ServingReport, int]:
    profile = profiles.profile(system)
    cost = ReplicaCost(llms.model("llama-3.1-70b"), profile.chip, llms.efficiency(profile.chip.key), layout)
    return simulate(cost, requests), profile.chips // layout.chips


def _ultraserver_ratio(
    profiles: ProfileCatalog, llms: LLMCatalogue, layout: Layout, requests: Requests
) -> tuple[float, float]:
    """(throughput, tokens-per-joule) ratios of a Trn3 Gen2 UltraServer over a Trn2 UltraServer, all replicas busy."""
    trn2, replicas2 = _system_run(profiles, llms, "trn2-ultraserver", layout, requests)
    trn3, replicas3 = _system_run(profiles, llms, "trn3-ultraserver-gen2", layout, requests)
    throughput = (trn3.output_tokens_per_s * replicas3) / (trn2.output_tokens_per_s * replicas2)
    return throughput, trn3.output_tokens_per_joule / trn2.output_tokens_per_joule


def test_prefill_bound_serving_gains_the_published_4_4x_compute(profiles: ProfileCatalog, llms: LLMCatalogue) -> None:
    prefill = Requests(arrivals=BurstArrivals(size=400), input_tokens=4000, output_tokens=1)
    throughput, _ = _ultraserver_ratio(profiles, llms, Layout(tp=4, max_batch=64, chunk_tokens=8192), prefill)
    assert throughput == pytest.approx(4.4, rel=0.10)


def test_batch_one_decode_gains_the_published_memory_bandwidth_ratio(
    profiles: ProfileCatalog, llms: LLMCatalogue
) -> None:
    decode = Requests(arrivals=BurstArrivals(size=4), input_tokens=100, output_tokens=400)
    throughput, _ = _ultraserver_ratio(profiles, llms, Layout(tp=1, max_batch=1), decode)
    assert 3.8 * 0.9 <= throughput <= 4.0 * 1.1


def test_tokens_per_joule_at_saturation_is_1_4x_and_small_work_does_not_show_it(
    profiles: ProfileCatalog, llms: LLMCatalogue
) -> None:
    saturated = Requests(arrivals=BurstArrivals(size=1500), input_tokens=1000, output_tokens=1000)
    _, energy = _ultraserver_ratio(profiles, llms, Layout(tp=4, max_batch=512), saturated)
    assert energy == pytest.approx(1.4, rel=0.15)
    one_short_call = Requests(arrivals=BurstArrivals(size=1), input_tokens=50, output_tokens=20)
    _, small = _ultraserver_ratio(profiles, llms, Layout(tp=4, max_batch=1), one_short_call)
    assert small < energy - 0.1, "latency-bound work is dominated by fixed costs, not by the faster chip"
