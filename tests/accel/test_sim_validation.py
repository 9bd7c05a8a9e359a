"""Validation against AWS's published Trn3-vs-Trn2 UltraServer claims, and capacity planning at scale."""

from __future__ import annotations

import pytest

from agentcore.accel.errors import WorkloadError
from agentcore.accel.sim.capacity import CapacityQuestion, plan_capacity
from agentcore.accel.sim.models import resolve_model
from agentcore.accel.sim.simulator import Simulator

# AWS: the Trn3 UltraServer (144 chips) has up to 4.4x the compute and almost 4x (3.8x) the memory
# bandwidth of the Trn2 UltraServer (64 chips). Research notes §1.3.
CLAIMS = {"compute-bound": 4.4, "memory-bound": 3.8}


@pytest.mark.parametrize("workload", sorted(CLAIMS))
def test_trn3_gen2_over_trn2_ultraserver_matches_the_published_ratio(workload: str) -> None:
    comparison = Simulator("trn2-ultraserver").compare("trn3-ultraserver-gen2", workload)
    assert comparison.throughput_ratio == pytest.approx(CLAIMS[workload], rel=0.10)
    assert comparison.a.completed == comparison.b.completed == comparison.a.requests


def test_the_two_presets_really_are_compute_and_memory_bound() -> None:
    trn2 = Simulator("trn2-ultraserver")
    mlp = resolve_model("mlp-4096x8")
    big, one = mlp.cost(512, 1, "fp8"), mlp.cost(1, 1, "bf16")
    profile = trn2.profile
    assert big.flops / profile.core_flops("fp8") > big.bytes / profile.core_bandwidth
    assert one.flops / profile.core_flops("bf16") < one.bytes / profile.core_bandwidth


def test_capacity_for_a_million_chip_question_is_answered_from_one_unit() -> None:
    unit = Simulator("trn3")
    question = CapacityQuestion(model="minilm", target_rps=1e10, p99_ms=10, probe_requests=5000)
    plan = plan_capacity(question, unit.profile, unit.service)
    assert plan.chips == plan.units and 100_000 < plan.chips <= 1_000_000
    assert plan.per_unit_p99_ms <= 10
    assert plan.chips * plan.per_unit_rps >= 1e10
    double = plan_capacity(question.model_copy(update={"target_rps": 2e10}), unit.profile, unit.service)
    assert double.chips == pytest.approx(2 * plan.chips, abs=1)


def test_an_impossible_latency_target_is_explained() -> None:
    unit = Simulator("trn2")
    with pytest.raises(WorkloadError, match="below one request's device time"):
        plan_capacity(CapacityQuestion(model="mlp-4096x8", target_rps=100, p99_ms=0.01), unit.profile, unit.service)
