"""Gates fail closed: a score that is no number, an evaluator with nothing judged, a baseline that cannot be
compared case by case never lets a run pass, and the CLI exits non-zero for each."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.evaluations import EvaluationSuite, Session, SuiteError, Trace, evaluate
from agentcore.evaluations.base import Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.models import Models
from agentcore.evaluations.outcome import summarise
from agentcore.evaluations.reports import render_json
from agentcore.evaluations.result import YES_NO, EvaluatorResult, Level, Status
from agentcore.evaluations.suite import Gate

SESSION = Session(id="s", traces=[Trace(id="s/t", input="Where is my order?", output="It ships on Friday.")])


class _Fixed(PerTargetEvaluator):
    """Scores every turn with one fixed value (what a buggy evaluator or judge might return)."""

    id = "Test.Fixed"
    level = Level.TRACE
    scale = YES_NO
    description = "a fixed score"

    def __init__(self, score: float) -> None:
        self.score = score

    def judge_one(self, target: Target, models: Models) -> Judgement:
        return Judgement(self.score, "computed")


@pytest.mark.parametrize("score", [math.inf, math.nan, -math.inf])
def test_a_score_that_is_no_finite_number_is_an_error_result(score: float, models: Models) -> None:
    [result] = evaluate([SESSION], [_Fixed(score)], models=models)
    assert result.status is Status.ERROR and not result.passed, "inf was clamped to 1.0: a pass"
    assert "no finite number" in result.explanation
    outcome = summarise("s", 1, [result], {})
    assert not outcome.passed and [c.name for c in outcome.summaries[0].checks] == ["errors"]


def _result(evaluator: str, case: str, score: float, status: Status = Status.JUDGED) -> EvaluatorResult:
    return EvaluatorResult(
        evaluator=evaluator, level=Level.TRACE, target_id=case, session_id=case.split("/")[0], score=score,
        raw_score=score, label="x", passed=status is Status.JUDGED and score >= 0.5, explanation="why", status=status,
    )  # fmt: skip


def test_every_gate_of_an_evaluator_that_judged_nothing_fails() -> None:
    unjudged = [_result("Builtin.Refusal", "a/t", 0.0, Status.NOT_APPLICABLE)]
    outcome = summarise("s", 1, unjudged, {"Builtin.Refusal": Gate(max_mean=0.1)})
    assert not outcome.passed, "max_mean passed on a mean of 0 over nothing judged"
    expected = {"Builtin.ToolParameterAccuracy": Level.TOOL_CALL}
    gates = {"Builtin.ToolParameterAccuracy": Gate(min_pass_rate=0.9)}
    missing = summarise("s", 1, [], gates, expected=expected)
    (summary,) = missing.summaries
    assert not missing.passed and summary.count == 0 and summary.coverage == 0.0
    assert [(c.name, c.passed) for c in summary.checks] == [("min_pass_rate", False)]
    assert summarise("s", 1, [], {}, expected=expected).passed, "without a gate nothing is checked"


def _write_suite(tmp_path: Path, sessions: list[Session], body: str) -> Path:
    (tmp_path / "traces.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in sessions), encoding="utf-8")
    suite = tmp_path / "suite.toml"
    suite.write_text(f'[suite]\nname = "t"\ntraces = ["traces.jsonl"]\ncache = ""\n{body}', encoding="utf-8")
    return suite


def test_a_suite_whose_gated_evaluator_finds_no_target_fails_in_the_cli(tmp_path: Path) -> None:
    # the agent under test made no tool call at all: the tool-call gate has nothing to pass on
    suite = _write_suite(
        tmp_path, [SESSION], '[[evaluators]]\nid = "Builtin.ToolParameterAccuracy"\nmin_pass_rate = 1\n'
    )
    outcome = EvaluationSuite.from_file(suite).run(cache=False)
    assert not outcome.passed and [s.evaluator for s in outcome.summaries] == ["Builtin.ToolParameterAccuracy"]
    result = CliRunner().invoke(app, ["eval", "run", str(suite), "--no-cache", "--json"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["passed"] is False


BASELINE = [_result("E", "a/t", 1.0), _result("E", "b/t", 1.0), _result("E", "c/t", 0.0)]


def test_a_regression_is_measured_over_the_cases_both_runs_judged() -> None:
    baseline = summarise("s", 3, BASELINE, {})
    # c/t (the case it failed) was dropped or renamed: the mean of what is left rose, yet a case went missing
    dropped = summarise("s", 2, BASELINE[:2], {}, baseline=baseline)
    assert not dropped.passed
    assert [(c.name, c.actual, c.passed) for c in dropped.summaries[0].checks] == [
        ("baseline_cases", 1.0, False),
        ("max_regression", 0.0, True),
    ]
    now_not_applicable = summarise("s", 3, [*BASELINE[:2], _result("E", "c/t", 0.0, Status.NOT_APPLICABLE)], {})
    assert not summarise("s", 3, now_not_applicable.results, {}, baseline=baseline).passed
    # a regression on a/t, padded with many easy new cases that lift the mean above the baseline's
    padded = [_result("E", "a/t", 0.0), *BASELINE[1:], *(_result("E", f"new{i}/t", 1.0) for i in range(20))]
    masked = summarise("s", 23, padded, {}, baseline=baseline)
    (summary,) = masked.summaries
    assert summary.mean > baseline.summaries[0].mean and not masked.passed
    assert summary.baseline_mean == pytest.approx(2 / 3, abs=1e-6) and summary.regression == pytest.approx(
        1 / 3, abs=1e-6
    )


def test_an_evaluator_the_baseline_does_not_have_fails_its_regression_check() -> None:
    baseline = summarise("s", 3, BASELINE, {})
    renamed = summarise("s", 3, [r.model_copy(update={"evaluator": "E2"}) for r in BASELINE], {}, baseline=baseline)
    (summary,) = renamed.summaries  # E itself is no longer in the suite: not compared
    assert not renamed.passed and summary.regression is None
    assert [(c.name, c.passed) for c in summary.checks] == [("max_regression", False)]


def test_a_baseline_with_a_mean_that_is_no_score_is_bad_input(tmp_path: Path) -> None:
    suite = _write_suite(tmp_path, [SESSION], '[[evaluators]]\nid = "Custom.Ships"\ntype = "regex"\n'
                         'options = { pattern = "ships" }\n')  # fmt: skip
    report = json.loads(render_json(EvaluationSuite.from_file(suite).run(cache=False)))
    report["summaries"][0]["mean"] = -1e309  # JSON for -Infinity: every regression against it was "negative"
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(report).replace("-Infinity", "-1e309"), encoding="utf-8")
    with pytest.raises(SuiteError, match="is not an agentcore JSON report"):
        EvaluationSuite.from_file(suite).run(cache=False, baseline=baseline)
    assert (
        CliRunner().invoke(app, ["eval", "run", str(suite), "--no-cache", "--baseline", str(baseline)]).exit_code == 2
    )
