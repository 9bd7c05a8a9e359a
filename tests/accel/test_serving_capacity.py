"""LLM capacity planning: the cheapest layout meeting p99 TTFT/TPOT, fleets up to a million chips."""

from __future__ import annotations

import pytest

from agentcore.accel.errors import WorkloadError
from agentcore.accel.serving.capacity import LLMCapacityQuestion, SessionShape, plan_llm_capacity
from agentcore.accel.serving.catalogue import load_llms
from agentcore.accel.sim.profiles import load_catalog

QUESTION = LLMCapacityQuestion(
    model="llama-3.1-8b", sessions_per_s=10, session=SessionShape(turns=3, input_tokens=1500, output_tokens=200),
    ttft_p99_ms=1500, tpot_p99_ms=40, tp=(1, 2), pp=(1,), max_batch=(32, 128), probe_requests=600,
)  # fmt: skip


def test_the_plan_meets_both_targets_and_is_the_cheapest_simulated_layout() -> None:
    plan = plan_llm_capacity(QUESTION, load_catalog().chips["trn3"], load_llms())
    best = plan.best
    assert plan.simulated and best.ttft_p99_ms <= 1500 and best.tpot_p99_ms <= 40
    assert best.replicas * best.per_replica_rps >= 10 * 3  # three turns per session
    assert best.usd_per_hour == min(candidate.usd_per_hour for candidate in plan.candidates)
    assert best.usd_per_session == pytest.approx(best.usd_per_hour / 3600 / 10)
    assert set(plan.rejected) | {f"tp{c.layout.tp}-pp1-b{c.layout.max_batch}-fp8" for c in plan.candidates} == {
        f"tp{tp}-pp1-b{b}-fp8" for tp in (1, 2) for b in (32, 128)
    }


def test_a_million_chip_fleet_is_answered_from_one_replica() -> None:
    question = QUESTION.model_copy(update={"sessions_per_s": 2e6, "tp": (1,), "max_batch": (128,)})
    plan = plan_llm_capacity(question, load_catalog().chips["trn3"], load_llms())
    assert 100_000 < plan.best.chips <= 1_000_000 and plan.probes < 20
    double = plan_llm_capacity(
        question.model_copy(update={"sessions_per_s": 4e6}), load_catalog().chips["trn3"], load_llms()
    )
    assert double.best.chips == pytest.approx(2 * plan.best.chips, abs=1)


def test_targets_no_layout_can_meet_are_explained() -> None:
    question = QUESTION.model_copy(update={"tpot_p99_ms": 0.5})
    with pytest.raises(WorkloadError, match="one request alone takes"):
        plan_llm_capacity(question, load_catalog().chips["trn2"], load_llms())
