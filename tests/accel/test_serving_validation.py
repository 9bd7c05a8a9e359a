"""The LLM serving model against published results and AWS's Trn3-vs-Trn2 claims (all simulated)."""

from __future__ import annotations

import pytest

from agentcore.accel.serving.catalogue import LLMCatalogue, load_llms
from agentcore.accel.serving.validation import ClaimCheck, trn3_claims, validation_table
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog

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


@pytest.fixture(scope="module")
def claims(profiles: ProfileCatalog, llms: LLMCatalogue) -> dict[str, ClaimCheck]:
    return {claim.key: claim for claim in trn3_claims(profiles, llms)}


def test_prefill_bound_serving_gains_the_published_4_4x_compute(claims: dict[str, ClaimCheck]) -> None:
    assert claims["compute"].simulated == pytest.approx(4.4, rel=0.10)


def test_batch_one_decode_gains_the_published_memory_bandwidth_ratio(claims: dict[str, ClaimCheck]) -> None:
    assert 3.8 * 0.9 <= claims["memory"].simulated <= 4.0 * 1.1


def test_tokens_per_joule_at_saturation_is_1_4x_and_small_work_does_not_show_it(
    claims: dict[str, ClaimCheck],
) -> None:
    energy = claims["energy"]
    assert energy.simulated == pytest.approx(1.4, rel=0.15)
    assert claims["energy-short-call"].simulated < energy.simulated - 0.1, "latency-bound work: fixed costs dominate"


def test_the_energy_check_says_it_is_circular_and_reports_the_press_hint(
    profiles: ProfileCatalog, claims: dict[str, ClaimCheck]
) -> None:
    energy, hint = claims["energy"], claims["energy-at-press-hint"]
    assert profiles.chips["trn3"].power_watts.source is None, "a sourced Trn3 power would make the check real"
    assert energy.by_construction and "by construction" in energy.note
    assert (energy.trn3_watts, hint.trn3_watts) == (690, 1000)
    # tokens per joule scale with 1 / watts at saturation: at ~1 kW Trn3 is no more efficient than Trn2
    assert hint.simulated == pytest.approx(energy.simulated * 690 / 1000, rel=0.05)
    assert hint.simulated < 1.0 < energy.simulated
    measured = {c.key: c for c in trn3_claims(load_catalog(overrides={"trn3.power_watts": 900}), load_llms())}
    assert not measured["energy"].by_construction, "a power not implied by the claim makes the check a real one"
