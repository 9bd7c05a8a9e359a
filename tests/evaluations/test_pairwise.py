"""Pairwise comparison of two agent versions: wins, ties, bootstrap intervals, gates and the CLI's exit codes."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.evaluations import EvaluationError, Session, Trace, create_evaluator, evaluate
from agentcore.evaluations.base import Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.models import Models
from agentcore.evaluations.pairwise import Preference, compare, compare_responses, render_comparison_markdown
from agentcore.evaluations.result import YES_NO, Level

QUESTIONS = [
    ("How do I reset my router?", "Unplug it for 30 seconds, plug it back in, and wait for the lights to settle."),
    (
        "How long should I boil an egg?",
        "About 7 minutes for a firm yolk and 5 for a soft one. Then cool it in cold water so it peels easily.",
    ),
    (
        "How do I convert Celsius to Fahrenheit?",
        "Multiply the Celsius value by 9/5 and add 32. For example, 20 °C is 20 × 9/5 + 32 = 68 °F.",
    ),
    (
        "How can I make my laptop battery last longer?",
        "Lower the screen brightness, close apps you are not using, and turn on the battery saver mode. "
        "Avoid keeping it at 100% charge all day.",
    ),
    (
        "What should I pack for a weekend hiking trip?",
        "Pack water, snacks, a rain jacket, a map, sunscreen, a first-aid kit and sturdy shoes. "
        "Bring a warm layer for the evening.",
    ),
    (
        "How do I write a good cover letter?",
        "Open with the role you want and why, show two or three achievements that match the job, "
        "and close with a clear request for an interview. Keep it to one page.",
    ),
]
REFUSAL = "I cannot help with that request."


def _sessions(good: bool) -> list[Session]:
    return [
        Session(id=f"s{n}", traces=[Trace(id=f"s{n}/t", input=question, output=answer if good else REFUSAL)])
        for n, (question, answer) in enumerate(QUESTIONS)
    ]


def test_compare_responses_prefers_the_answer_over_a_refusal_and_ties_equal_replies(models: Models) -> None:
    helpfulness = [create_evaluator("Builtin.Helpfulness")]
    for question, answer in QUESTIONS:
        preferred = compare_responses(question, REFUSAL, answer, helpfulness, models=models)
        assert preferred == {"Builtin.Helpfulness": Preference.B}, question
    same = compare_responses(*QUESTIONS[0], QUESTIONS[0][1], helpfulness, models=models)
    assert same == {"Builtin.Helpfulness": Preference.TIE}


def test_a_refusal_of_a_benign_request_is_capped(models: Models) -> None:
    session = Session(id="s", traces=[Trace(id="s/t", input="How do I reset my router?", output=REFUSAL)])
    [result] = evaluate([session], [create_evaluator("Builtin.Helpfulness")], models=models)
    assert result.raw_score < 0.25 and "refuses a request judged benign" in result.explanation


def test_compare_counts_wins_ties_and_gates_with_a_bootstrap_interval(models: Models) -> None:
    evaluators = [create_evaluator("Builtin.Helpfulness"), create_evaluator("Builtin.InstructionFollowing")]
    better = compare(_sessions(False), _sessions(True), evaluators, models=models, max_loss={"Builtin.Helpfulness": 0})
    helpfulness, instructions = better.summaries
    assert (helpfulness.pairs, helpfulness.wins_b, helpfulness.wins_a) == (6, 6, 0)
    assert helpfulness.win_rate_b == 1.0 and helpfulness.ci_low == helpfulness.ci_high == 1.0 and better.passed
    assert instructions.pairs == 0 and instructions.not_applicable == 6  # no verifiable instruction on either side
    worse = compare(_sessions(True), _sessions(False), evaluators, models=models, max_loss={"Builtin.Helpfulness": 0.5})
    assert not worse.passed and worse.summaries[0].checks[0].actual == 1.0
    mixed = _sessions(True)[:3] + _sessions(False)[3:]
    even = compare(_sessions(True), mixed, evaluators[:1], models=models, seed=1)
    summary = even.summaries[0]
    assert (summary.ties, summary.wins_a) == (3, 3) and summary.win_rate_b == 0.25
    assert summary.ci_low < summary.win_rate_b < summary.ci_high
    again = compare(_sessions(True), mixed, evaluators[:1], models=models, seed=1)
    assert again.summaries == even.summaries  # the interval is seeded: same inputs, same report


def test_compare_rejects_what_it_cannot_pair(models: Models) -> None:
    helpfulness = [create_evaluator("Builtin.Helpfulness")]
    other = [Session(id="elsewhere", traces=[Trace(id="t", input="hi", output="hello")])]
    with pytest.raises(EvaluationError, match="share no session id"):
        compare(_sessions(True), other, helpfulness, models=models)
    with pytest.raises(EvaluationError, match="single tool calls"):
        compare(_sessions(True), _sessions(True), [create_evaluator("Builtin.ToolSelectionAccuracy")], models=models)
    with pytest.raises(EvaluationError, match="not compared"):
        compare(_sessions(True), _sessions(True), helpfulness, models=models, max_loss={"Builtin.Refusal": 0.1})
    with pytest.raises(EvaluationError, match="tie_margin"):
        compare(_sessions(True), _sessions(True), helpfulness, models=models, tie_margin=1.5)


def _write(path: Path, sessions: list[Session]) -> Path:
    path.write_text("".join(session.model_dump_json() + "\n" for session in sessions), encoding="utf-8")
    return path


def test_cli_compare_gates_and_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "runs" / "b").mkdir(parents=True)
    good = _write(tmp_path / "runs" / "b" / "traces.jsonl", _sessions(True))
    bad = _write(tmp_path / "a.jsonl", _sessions(False))
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[suite]\nname = "ab"\ntraces = ["a.jsonl"]\ncache = ""\n'
        '[[evaluators]]\nid = "Builtin.Helpfulness"\nmax_loss = 0.1\n'
        '[[evaluators]]\nid = "Builtin.ToolSelectionAccuracy"\n',  # tool-call level: left out of comparisons
        encoding="utf-8",
    )
    runner = CliRunner()
    summary = tmp_path / "summary.md"
    improved = runner.invoke(
        app, ["eval", "compare", str(suite), "--a", str(bad), "--b", str(good.parent), "--markdown", str(summary)]
    )
    assert improved.exit_code == 0, improved.output
    assert "| Builtin.Helpfulness | 6 | 6 | 0 | 0 |" in summary.read_text(encoding="utf-8")
    report = tmp_path / "cmp.json"
    backwards = ["eval", "compare", str(suite), "--a", str(good), "--b", str(bad)]
    regressed = runner.invoke(app, [*backwards, "--report", str(report)])
    assert regressed.exit_code == 1 and '"max_loss"' in report.read_text(encoding="utf-8")
    assert runner.invoke(app, [*backwards, "--max-loss", "Builtin.Helpfulness=1"]).exit_code == 0
    assert runner.invoke(app, [*backwards, "--max-loss", "x"]).exit_code == 2
    missing = ["eval", "compare", str(suite), "--a", str(tmp_path / "nope.jsonl"), "--b", str(bad)]
    assert runner.invoke(app, missing).exit_code == 2


def test_cli_compare_shows_paths_and_evaluator_ids_escaped(
    tmp_path: Path, hostile_text: tuple[str, ...], shown_safely: Callable[..., None]
) -> None:
    """The table's title names the two trace folders and its rows the suite's evaluator ids: ``x[/]`` in either
    stopped `eval compare` with a MarkupError, and escapes in them reached the terminal."""
    (tmp_path / "x[").mkdir()
    a = _write(tmp_path / "a.jsonl", _sessions(False))
    b = _write(tmp_path / "x[" / "] \x1b[31mb.jsonl", _sessions(True))  # its path spells x[/]
    evaluators = "".join(
        f'[[evaluators]]\nid = {json.dumps("Custom." + text)}\ntype = "keywords"\noptions = {{ keywords = ["egg"] }}\n'
        for text in hostile_text
    )
    suite = tmp_path / "suite.toml"
    suite.write_text(f'[suite]\nname = "ab"\ntraces = ["a.jsonl"]\ncache = ""\n{evaluators}', encoding="utf-8")
    result = CliRunner().invoke(
        app, ["eval", "compare", str(suite), "--a", str(a), "--b", str(b)], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 0, result.output
    shown_safely(result.output, str(b), *(f"Custom.{text}" for text in hostile_text))


class _FailsOnRefusals(PerTargetEvaluator):
    """1 for an answer; a score that is no number (an error result) for a refusal, as a broken judge might."""

    id = "Test.FailsOnRefusals"
    level = Level.TRACE
    scale = YES_NO
    description = "errors where the agent refuses"

    def judge_one(self, target: Target, models: Models) -> Judgement:
        assert target.trace is not None
        return Judgement(math.nan if target.trace.output == REFUSAL else 1.0, "scored")


def test_b_cannot_pass_a_max_loss_gate_by_skipping_the_sessions_it_would_lose(models: Models) -> None:
    helpfulness = [create_evaluator("Builtin.Helpfulness")]
    gate = {"Builtin.Helpfulness": 0.0}
    skipped = compare(_sessions(True), _sessions(True)[:2], helpfulness, models=models, max_loss=gate)
    assert not skipped.passed, "B ran 2 of A's 6 sessions and passed on those"
    assert skipped.unmatched_a == ("s2", "s3", "s4", "s5")
    assert [(c.name, c.actual, c.passed) for c in skipped.checks] == [("unmatched_a", 4, False)]
    assert "4 only in A" in render_comparison_markdown(skipped, title="t")
    extra = [*_sessions(True), Session(id="new", traces=[Trace(id="new/t", input="hi", output="hello")])]
    added = compare(_sessions(True), extra, helpfulness, models=models, max_loss=gate)
    assert added.passed and added.unmatched_b == ("new",), "a session only B ran cannot hide a loss: reported only"


def test_b_cannot_pass_by_dropping_turns_of_a_shared_session(models: Models) -> None:
    two = [
        Trace(id="s/1", input=QUESTIONS[0][0], output=QUESTIONS[0][1]),
        Trace(id="s/2", input="And then?", output=REFUSAL),
    ]
    one = [two[0]]
    outcome = compare([Session(id="s", traces=two)], [Session(id="s", traces=one)],
                      [create_evaluator("Builtin.Helpfulness")], models=models)  # fmt: skip
    [summary] = outcome.summaries
    assert not outcome.passed and summary.missing_b == 1
    assert [(c.name, c.actual) for c in summary.checks] == [("missing_in_b", 1)]


def test_pairs_with_an_error_on_either_side_fail_the_comparison(models: Models) -> None:
    evaluators = [_FailsOnRefusals()]
    mixed = _sessions(True)[:3] + _sessions(False)[3:]  # B's last three turns are error results
    for a, b in ((_sessions(True), mixed), (mixed, _sessions(True))):
        outcome = compare(a, b, evaluators, models=models, max_loss={"Test.FailsOnRefusals": 0.0})
        [summary] = outcome.summaries
        assert not outcome.passed, "three pairs could not be judged and the gate passed on the other three"
        assert (summary.pairs, summary.errors) == (3, 3)
        assert ("errors", 3, False) in [(c.name, c.actual, c.passed) for c in summary.checks]
    ungated = compare(_sessions(True), mixed, evaluators, models=models)
    assert not ungated.passed, "an error result fails the comparison as it fails `eval run`"


def test_cli_compare_exits_1_when_b_skipped_sessions(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", _sessions(True))
    b = _write(tmp_path / "b.jsonl", _sessions(True)[:2])
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[suite]\nname = "ab"\ntraces = ["a.jsonl"]\ncache = ""\n[[evaluators]]\nid = "Builtin.Helpfulness"\n'
        "max_loss = 0.1\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["eval", "compare", str(suite), "--a", str(a), "--b", str(b)])
    assert result.exit_code == 1, result.output
    assert "4 sessions of A are missing in B" in result.output
