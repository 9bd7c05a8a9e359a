"""Tool-call, goal and trajectory evaluators against BFCL and τ-bench ground truth and systematic mutations."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agentcore.evaluations import Session, SessionReference, ToolCall, Trace, agreement, create_evaluator, evaluate
from agentcore.evaluations.models import Models
from agentcore.evaluations.trace import ToolSpec

SELECTION = {"ground_truth", "wrong_function", "irrelevant_call"}


def _accuracy(cases: list[tuple[str, Session, bool]], evaluator_id: str, models: Models) -> dict[str, float]:
    results = evaluate([session for _, session, _ in cases], [create_evaluator(evaluator_id)], models=models)
    assert len(results) == len(cases)
    right, total = Counter[str](), Counter[str]()
    for (mutation, _, should_pass), result in zip(cases, results, strict=True):
        total[mutation] += 1
        right[mutation] += result.passed == should_pass
    return {mutation: right[mutation] / total[mutation] for mutation in total}


def test_bfcl_selection_and_parameters_agree_with_ground_truth(data_dir: Path, models: Models) -> None:
    cases = agreement.bfcl_cases(data_dir, every=5)
    selection = _accuracy([c for c in cases if c[0] in SELECTION], "Builtin.ToolSelectionAccuracy", models)
    parameters = _accuracy(
        [c for c in cases if c[0] not in SELECTION - {"ground_truth"}], "Builtin.ToolParameterAccuracy", models
    )
    assert set(selection) == SELECTION
    assert {"missing_argument", "extra_argument", "wrong_type", "wrong_value"} <= set(parameters)
    for mutation, accuracy in {**selection, **parameters}.items():
        assert accuracy >= 0.9, (mutation, accuracy)


def test_tau_bench_goal_success_detects_dropped_and_altered_actions(data_dir: Path, models: Models) -> None:
    accuracy = _accuracy(agreement.tau_bench_cases(data_dir, "dev"), "Builtin.GoalSuccessRate", models)
    assert set(accuracy) >= {"ground_truth", "dropped_action", "altered_argument"}
    assert all(value >= 0.9 for value in accuracy.values()), accuracy


def _session(names: list[str], expected: list[str] | None) -> Session:
    calls = [ToolCall(id=f"c{i}", name=name) for i, name in enumerate(names)]
    reference = SessionReference(expected_trajectory=expected) if expected is not None else None
    return Session(id="s", traces=[Trace(id="t", input="q", output="a", spans=list(calls))], reference=reference)


def test_trajectory_matchers(models: Models) -> None:
    expected = ["find_user", "get_order", "cancel_order"]
    cases = {
        "exact": (["find_user", "get_order", "cancel_order"], (1, 1, 1)),
        "extra step between": (["find_user", "think", "get_order", "cancel_order"], (0, 1, 1)),
        "swapped": (["get_order", "find_user", "cancel_order"], (0, 0, 1)),
        "missing": (["find_user", "cancel_order"], (0, 0, 0)),
    }
    ids = ["Builtin.TrajectoryExactOrderMatch", "Builtin.TrajectoryInOrderMatch", "Builtin.TrajectoryAnyOrderMatch"]
    for name, (actual, verdicts) in cases.items():
        results = evaluate([_session(actual, expected)], [create_evaluator(i) for i in ids], models=models)
        assert tuple(int(r.score) for r in results) == verdicts, name
    assert evaluate([_session(["a"], None)], [create_evaluator(ids[0])], models=models) == [], "no reference: skipped"


def test_selection_without_reference_ranks_offered_tools(models: Models) -> None:
    tools = [
        ToolSpec(name="get_weather", description="Current weather for a city."),
        ToolSpec(name="book_flight", description="Book a flight between two airports on a date."),
    ]

    def turn(name: str) -> Session:
        trace = Trace(
            id="t", input="Book me a flight from Boston to Denver on May 3.", spans=[ToolCall(id="c", name=name)]
        )
        return Session(id=name, traces=[trace], tools=tools)

    right, wrong, unknown = evaluate(
        [turn("book_flight"), turn("get_weather"), turn("delete_account")],
        [create_evaluator("Builtin.ToolSelectionAccuracy")],
        models=models,
    )
    assert right.passed and not wrong.passed and not unknown.passed
    assert "not among the offered tools" in unknown.explanation


def test_parameters_without_reference_check_schema_and_grounding(models: Models) -> None:
    tool = ToolSpec(
        name="cancel",
        parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    )

    def turn(arguments: dict[str, object]) -> Session:
        trace = Trace(
            id="t", input="Please cancel order W123.", spans=[ToolCall(id="c", name="cancel", arguments=arguments)]
        )
        return Session(id=str(arguments), traces=[trace], tools=[tool])

    grounded, invented, missing, wrong_type = evaluate(
        [turn({"order_id": "W123"}), turn({"order_id": "W999"}), turn({}), turn({"order_id": 5})],
        [create_evaluator("Builtin.ToolParameterAccuracy")],
        models=models,
    )
    assert grounded.passed and not invented.passed
    assert "missing required argument 'order_id'" in missing.explanation
    assert "should be string" in wrong_type.explanation


def test_goal_assertions_need_a_supporting_agent_sentence(models: Models) -> None:
    reference = SessionReference(assertions=["The agent told the user that the refund of $45.99 was issued."])

    def said(output: str) -> Session:
        return Session(
            id=output[:10], traces=[Trace(id="t", input="Refund my order", output=output)], reference=reference
        )

    met, unmet = evaluate(
        [said("Your refund of $45.99 has been issued to your card."), said("Please contact the store about that.")],
        [create_evaluator("Builtin.GoalSuccessRate")],
        models=models,
    )
    assert met.passed and not unmet.passed and "assertion" in unmet.explanation
