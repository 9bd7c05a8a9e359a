"""No vacuous passes: what an evaluator cannot judge is 'not applicable', counted in coverage, never a pass;
reports agree with the exit code."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.evaluations import (
    ExpectedCall,
    Session,
    SessionReference,
    ToolCall,
    ToolSpec,
    Trace,
    create_evaluator,
    evaluate,
)
from agentcore.evaluations.models import Models
from agentcore.evaluations.outcome import summarise
from agentcore.evaluations.reports import render_junit, render_markdown
from agentcore.evaluations.result import EvaluatorResult, Level, Status
from agentcore.evaluations.suite import Gate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "evals"
GET = ToolSpec(name="get_reservation_details", description="Look a reservation up.", read_only=True)
CANCEL = ToolSpec(name="cancel_reservation", description="Cancel a reservation.")


def _one(session_id: str, **fields: object) -> Session:
    return Session(id=session_id, traces=[Trace(id=f"{session_id}/t", **fields)])  # type: ignore[arg-type]


def _only(evaluator_id: str, sessions: list[Session], models: Models) -> list[EvaluatorResult]:
    return evaluate(sessions, [create_evaluator(evaluator_id)], models=models)


def test_instruction_following_without_a_verifiable_instruction_is_not_a_pass(models: Models) -> None:
    [haiku, counted] = _only(
        "Builtin.InstructionFollowing",
        [
            _one("haiku", input="Write a haiku about autumn.", output="Leaves fall on the pond."),
            _one("counted", input="Answer in fewer than 5 words. What is 2+2?", output="It is four, I think, yes."),
        ],
        models,
    )
    assert haiku.status is Status.NOT_APPLICABLE and not haiku.passed and haiku.label == "Not Applicable"
    assert counted.judged and not counted.passed


def test_correctness_abstains_without_a_reference_or_context(models: Models) -> None:
    [open_answer, grounded] = _only(
        "Builtin.Correctness",
        [
            _one("open", input="Who won the 1987 Tour de France?", output="Greg LeMond won it by 8 seconds."),
            _one(
                "grounded",
                input="Who won the 1987 Tour de France?",
                output="Stephen Roche won it.",
                context=["Stephen Roche won the 1987 Tour de France ahead of Pedro Delgado."],
            ),
        ],
        models,
    )
    assert open_answer.status is Status.NOT_APPLICABLE and not open_answer.passed
    assert grounded.judged


def _cancel(session_id: str, *, reference: SessionReference | None, decision: str = "allow") -> Session:
    return Session(
        id=session_id,
        tools=[GET, CANCEL],
        traces=[
            Trace(
                id=f"{session_id}/t",
                input="Cancel my reservation ABC123.",
                output="Done, it is cancelled.",
                spans=[ToolCall(id="c0", name="cancel_reservation", arguments={"id": "ABC123"}, decision=decision)],
            )
        ],
        reference=reference,
    )


def test_goal_success_needs_goals_and_does_not_pass_a_denied_session_vacuously(models: Models) -> None:
    results = _only(
        "Builtin.GoalSuccessRate",
        [
            _cancel("no_reference", reference=None),
            _cancel("empty_reference", reference=SessionReference(), decision="deny"),
            _cancel("trajectory_only", reference=SessionReference(expected_trajectory=["cancel_reservation"])),
        ],
        models,
    )
    by_id = {result.session_id: result for result in results}
    assert by_id["no_reference"].status is Status.NOT_APPLICABLE and not by_id["no_reference"].passed
    assert by_id["empty_reference"].judged and not by_id["empty_reference"].passed
    assert by_id["trajectory_only"].status is Status.NOT_APPLICABLE


def test_goal_success_judges_the_end_state_by_state_changing_actions(models: Models) -> None:
    lookup = ExpectedCall(name="get_reservation_details", arguments={"id": ["ABC123"]})
    cancel = ExpectedCall(name="cancel_reservation", arguments={"id": ["ABC123"]})
    wanted = ExpectedCall(name="get_reservation_details", arguments={"id": ["ABC123"]}, required=True)
    results = _only(
        "Builtin.GoalSuccessRate",
        [
            _cancel("lookup_skipped", reference=SessionReference(expected_actions=[lookup, cancel])),
            _cancel("lookup_required", reference=SessionReference(expected_actions=[wanted, cancel])),
            _cancel(
                "wrong_id",
                reference=SessionReference(
                    expected_actions=[ExpectedCall(name="cancel_reservation", arguments={"id": ["ZZZ999"]})]
                ),
            ),
        ],
        models,
    )
    by_id = {result.session_id: result for result in results}
    assert by_id["lookup_skipped"].passed, by_id["lookup_skipped"].explanation
    assert not by_id["lookup_required"].passed
    assert not by_id["wrong_id"].passed


def _result(evaluator: str, target: str, score: float, *, status: Status = Status.JUDGED) -> EvaluatorResult:
    return EvaluatorResult(
        evaluator=evaluator,
        level=Level.TRACE,
        target_id=target,
        session_id="s1",
        score=score,
        raw_score=score,
        label="x",
        passed=status is Status.JUDGED and score >= 0.5,
        explanation="why",
        status=status,
    )


RESULTS = [
    _result("Gated", "s1/t1", 1.0),
    _result("Gated", "s1/t2", 0.0),
    _result("Gated", "s1/t3", 0.0, status=Status.NOT_APPLICABLE),
    _result("Ungated", "t1", 0.0),
]


def test_summaries_are_over_judged_results_and_report_coverage() -> None:
    outcome = summarise("s", 1, RESULTS, {"Gated": Gate(min_coverage=0.7)})
    gated, ungated = outcome.summaries
    assert (gated.count, gated.not_applicable, gated.mean, gated.pass_rate) == (2, 1, 0.5, 0.5)
    assert gated.coverage == pytest.approx(2 / 3) and ungated.coverage == 1.0
    assert not outcome.passed and [c.name for c in gated.checks if not c.passed] == ["min_coverage"]
    nothing = summarise("s", 1, [RESULTS[2]], {"Gated": Gate(min_mean=0.1)})
    assert not nothing.passed  # a gate on an evaluator that judged nothing fails, it does not pass on nothing


def test_junit_fails_exactly_when_the_gates_fail() -> None:
    passing = summarise("s", 1, RESULTS, {"Gated": Gate(min_mean=0.4)})
    root = ElementTree.fromstring(render_junit(passing))
    assert passing.passed and root.get("failures") == "0" and root.findall(".//failure") == []
    assert root.get("skipped") == "1" and len(root.findall(".//skipped")) == 1
    assert [out.text for out in root.findall(".//system-out")] == ["x (0): why", "x (0): why"]
    assert {p.get("name") for p in root.findall(".//property")} >= {"coverage", "gated", "pass_rate"}
    failing = summarise("s", 1, RESULTS, {"Gated": Gate(min_score=0.5)})
    root = ElementTree.fromstring(render_junit(failing))
    # the result under min_score and the min_score gate itself
    assert not failing.passed and root.get("failures") == "2" and len(root.findall(".//failure")) == 2
    names = [case.get("name") for case in root.iter("testcase")]
    assert "s1/t1" in names and "s1/s1/t1" not in names  # target ids do not repeat the session


def test_markdown_summary_is_appended(tmp_path: Path) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    args = ["eval", "run", str(EXAMPLES / "suite.toml"), "--no-cache", "--markdown", str(summary)]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert CliRunner().invoke(app, args).exit_code == 0
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n") and text.count("## Evaluation:") == 2
    assert "| Coverage |" in render_markdown(summarise("s", 1, RESULTS, {}))


def test_html_charts_have_axes_ticks_counts_and_a_baseline_column() -> None:
    from agentcore.evaluations.reports import render_html

    before = [_result("Gated", "s1/t1", 1.0), _result("Gated", "s1/t2", 0.5), RESULTS[2], RESULTS[3]]
    baseline = summarise("s", 1, before, {})
    outcome = summarise("s", 1, RESULTS, {"Gated": Gate(min_mean=0.4)}, baseline=baseline)
    page = render_html(outcome)
    assert "<th>vs baseline</th>" in page and "<td>-0.250</td>" in page and "<td>67%</td>" in page  # coverage
    assert page.count(">score</text>") == 2 and ">results</text>" in page  # axis titles on every histogram
    assert "1 passed / 1 failed" in page and ">-0.250</text>" in page  # counts and changes written on the bars
    assert "1 not applicable" in page
