"""The iteration cost model: roofline terms, KV capacity, TP collectives, PP hops, precision, MoE routing."""

from __future__ import annotations

import pytest

from agentcore.accel.errors import ProfileError
from agentcore.accel.serving.catalogue import LLMCatalogue, load_llms
from agentcore.accel.serving.costmodel import Layout, ReplicaCost
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog


@pytest.fixture(scope="module")
def profiles() -> ProfileCatalog:
    return load_catalog()


@pytest.fixture(scope="module")
def llms() -> LLMCatalogue:
    return load_llms()


def _cost(
    profiles: ProfileCatalog, llms: LLMCatalogue, chip: str, model: str = "llama-3.1-70b", **layout: object
) -> ReplicaCost:
    return ReplicaCost(llms.model(model), profiles.chips[chip], llms.efficiency(chip), Layout.model_validate(layout))


def test_batch_one_decode_is_weight_streaming_and_prefill_is_compute(
    profiles: ProfileCatalog, llms: LLMCatalogue
) -> None:
    cost = _cost(profiles, llms, "h200", precision="fp8")
    chip, model = profiles.chips["h200"], llms.model("llama-3.1-70b")
    weights = (model.total_params - model.embedding_params) * 1.0
    memory = (weights + cost.kv_per_token * 1001) / (chip.hbm_tbps.value * 1e12 * 0.8)
    assert cost.step_seconds(1, 1000) == pytest.approx(memory + 0.001, rel=1e-9)  # + step overhead
    flops = 4096 * model.linear_flops_per_token + model.attention_flops_coefficient * 4096 * 2048
    assert cost.step_seconds(4096, 4096 * 2048) == pytest.approx(flops / (chip.fp8_tflops.value * 1e12 * 0.42) + 0.001)


def test_kv_capacity_is_what_the_weights_leave_and_too_small_a_replica_is_refused(
    profiles: ProfileCatalog, llms: LLMCatalogue
) -> None:
    one = _cost(profiles, llms, "h100", precision="fp8")
    two = _cost(profiles, llms, "h100", precision="fp8", tp=2)
    assert two.kv_capacity_tokens > 2 * one.kv_capacity_tokens  # the second GPU's memory is all KV
    with pytest.raises(ProfileError, match="raise tp/pp"):
        _ = _cost(profiles, llms, "h100", model="llama-3.1-405b", precision="fp8").kv_capacity_tokens


def test_tensor_parallel_collectives_cost_latency_and_bandwidth(profiles: ProfileCatalog, llms: LLMCatalogue) -> None:
    tp1, tp8 = (_cost(profiles, llms, "trn2", precision="bf16", tp=tp) for tp in (1, 8))
    assert tp1.collective_fixed == 0 and tp8.collective_fixed == pytest.approx(2 * 80 * 2 * 7 * 3.1e-6)
    assert tp8.step_seconds(1, 100) < tp1.step_seconds(1, 100) / 3  # 8x the bandwidth, minus the all-reduces
    with pytest.raises(ProfileError, match="chip-to-chip domain of 16 chips; use pp"):
        _cost(profiles, llms, "trn2", tp=32)
    with pytest.raises(ProfileError, match="no 'link_latency_us' figure, which this layout needs"):
        _cost(profiles, llms, "trn1", model="llama-3.1-8b", precision="bf16", pp=2)  # trn1's profile lacks it


def test_pipeline_stages_outside_the_domain_hop_over_the_network(profiles: ProfileCatalog, llms: LLMCatalogue) -> None:
    inside = _cost(profiles, llms, "h100", model="llama-3.1-405b", precision="fp8", tp=4, pp=2)
    across = _cost(profiles, llms, "h100", model="llama-3.1-405b", precision="fp8", tp=8, pp=2)
    assert inside.hop_per_token < across.hop_per_token  # NVLink inside the 8-GPU box, EFA between boxes
    big_batch = 512 * across.model.linear_flops_per_token
    assert across.step_seconds(512, 512 * 1000) < big_batch / across.peak  # compute spreads over both stages


def test_precision_selects_the_peak_and_mxfp4_needs_a_chip_that_has_it(
    profiles: ProfileCatalog, llms: LLMCatalogue
) -> None:
    bf16, fp8 = (_cost(profiles, llms, "trn3", precision=p, tp=4) for p in ("bf16", "fp8"))
    assert fp8.peak == pytest.approx(bf16.peak * 2517 / 671)
    fp4 = _cost(profiles, llms, "trn3", model="gpt-oss-120b", precision="fp4")
    assert fp4.weight_bytes == pytest.approx(llms.model("gpt-oss-120b").total_params * 4.25 / 8)
    with pytest.raises(ProfileError, match="no 'fp4' peak; it supports fp32, bf16, fp8"):
        _cost(profiles, llms, "trn2", precision="fp4")
    with pytest.raises(ProfileError, match="choose bf16, fp8 or fp4"):
        _cost(profiles, llms, "trn2", precision="int3")


def test_moe_reads_only_the_experts_a_batch_routes_to(profiles: ProfileCatalog, llms: LLMCatalogue) -> None:
    cost = _cost(profiles, llms, "trn3", model="gpt-oss-120b", precision="fp8")
    one, many = cost.streamed_weight_bytes(1), cost.streamed_weight_bytes(4096)
    assert one < 0.1 * many and many == pytest.approx(
        cost.weight_bytes - llms.model("gpt-oss-120b").embedding_params, rel=0.01
    )
