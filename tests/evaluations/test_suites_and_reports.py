"""Suites, gates, baselines, the four report formats and the ``agentcore eval`` CLI's exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.evaluations import (
    EvaluationSuite,
    Session,
    SuiteError,
    Target,
    Trace,
    UnknownEvaluatorError,
    create_evaluator,
    evaluate,
    evaluator,
    load_sessions,
    load_suite,
)
from agentcore.evaluations.models import Models
from agentcore.evaluations.reports import render_html, render_json, render_junit, render_markdown
from agentcore.evaluations.runner import ResultCache

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "evals"
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def outcome(accelerator):  # type: ignore[no-untyped-def]
    return EvaluationSuite.from_file(EXAMPLES / "suite.toml", accelerator=accelerator).run(cache=False)


def _suite(tmp_path: Path, body: str) -> Path:
    shutil.copy(EXAMPLES / "traces.jsonl", tmp_path / "traces.jsonl")
    path = tmp_path / "suite.toml"
    path.write_text(f'[suite]\nname = "t"\ntraces = ["traces.jsonl"]\ncache = "{tmp_path / "cache.sqlite"}"\n{body}')
    return path


def test_example_suite_passes_and_covers_every_builtin(outcome) -> None:  # type: ignore[no-untyped-def]
    assert outcome.passed and outcome.sessions == 5
    evaluated = {summary.evaluator for summary in outcome.summaries}
    assert len([e for e in evaluated if e.startswith("Builtin.")]) == 14 and "Custom.NoDeliveryPromise" in evaluated


def test_json_report_is_versioned_and_byte_identical(accelerator, outcome) -> None:  # type: ignore[no-untyped-def]
    first = render_json(outcome)
    again = render_json(EvaluationSuite.from_file(EXAMPLES / "suite.toml", accelerator=accelerator).run(cache=False))
    assert first == again
    data = json.loads(first)
    assert data["schema_version"] == "agentcore.eval-report/1"
    assert all("cpu_seconds" not in usage for result in data["results"] for usage in result["usage"])
    assert "timing" not in data and "llm_cost" not in data, "the library's report carries nothing run-dependent"


def test_junit_report_follows_the_junit_schema(outcome) -> None:  # type: ignore[no-untyped-def]
    root = ElementTree.fromstring(render_junit(outcome))
    assert root.tag == "testsuites"
    total = 0
    for suite in root.findall("testsuite"):
        assert {"name", "tests", "failures", "errors", "skipped", "time"} <= set(suite.attrib)
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases)
        assert int(suite.get("failures", "-1")) == sum(1 for case in cases if case.find("failure") is not None)
        for case in cases:
            assert case.get("name") and case.get("classname") and case.get("time") is not None
            failure = case.find("failure")
            if failure is not None:
                assert failure.get("message") and failure.get("type") and failure.text
        total += len(cases)
    assert int(root.get("tests", "-1")) == total == len(outcome.results) + sum(len(s.checks) for s in outcome.summaries)


def test_markdown_and_html_reports(outcome) -> None:  # type: ignore[no-untyped-def]
    markdown = render_markdown(outcome)
    assert markdown.startswith("## Evaluation: retail-support") and "| Builtin.Helpfulness | trace |" in markdown
    page = render_html(outcome)
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count('class="chart score-distribution"') == len(outcome.summaries)
    assert 'class="chart pass-fail"' in page


def _chromium() -> str | None:
    return next(
        (path for name in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(name))), None
    )


def test_html_renders_in_headless_chromium(tmp_path: Path, outcome) -> None:  # type: ignore[no-untyped-def]
    browser = _chromium()
    if browser is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is required in CI to render the HTML report")
        pytest.skip("chromium is not installed")
    page = tmp_path / "report.html"
    page.write_text(render_html(outcome), encoding="utf-8")
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert dom.count("score-distribution") >= len(outcome.summaries)
    assert "pass-fail" in dom and "<rect" in dom


def test_gates_and_baseline_regressions(tmp_path: Path, accelerator, outcome) -> None:  # type: ignore[no-untyped-def]
    baseline = json.loads(render_json(outcome))
    for result in baseline["results"]:
        if result["evaluator"] == "Builtin.ResponseRelevance" and result["status"] == "judged":
            result["score"] = 1.0  # pretend the last release was better
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    suite = _suite(tmp_path, '[[evaluators]]\nid = "Builtin.ResponseRelevance"\n')
    regressed = EvaluationSuite.from_file(suite, accelerator=accelerator).run(baseline=tmp_path / "baseline.json")
    (summary,) = regressed.summaries
    assert not regressed.passed and summary.regression is not None and summary.regression > 0.05
    assert any(check.name == "max_regression" and not check.passed for check in summary.checks)
    strict = _suite(tmp_path, '[[evaluators]]\nid = "Builtin.ResponseRelevance"\nmin_mean = 0.99\n')
    assert not EvaluationSuite.from_file(strict, accelerator=accelerator).run().passed


def test_results_are_cached_by_content(tmp_path: Path, accelerator) -> None:  # type: ignore[no-untyped-def]
    sessions = load_sessions(EXAMPLES / "traces.jsonl")
    evaluators = [create_evaluator("Builtin.ResponseRelevance")]
    first_models, second_models = Models(accelerator), Models(accelerator)
    first = evaluate(sessions, evaluators, models=first_models, cache=ResultCache(tmp_path / "cache.sqlite"))
    second = evaluate(sessions, evaluators, models=second_models, cache=ResultCache(tmp_path / "cache.sqlite"))
    assert first == second and first_models.embed_receipts and not second_models.embed_receipts
    changed = [sessions[0].model_copy(update={"id": "renamed"}), *sessions[1:]]
    third_models = Models(accelerator)
    evaluate(changed, evaluators, models=third_models, cache=ResultCache(tmp_path / "cache.sqlite"))
    assert sum(receipt.items for receipt in third_models.embed_receipts) == 4, "only the changed session is re-scored"


def test_cli_exit_codes_and_report_files(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "out"
    args = ["eval", "run", str(EXAMPLES / "suite.toml"), "--no-cache"]
    files = [
        "--junit",
        str(out / "j.xml"),
        "--html",
        str(out / "r.html"),
        "--markdown",
        str(out / "s.md"),
        "--report",
        str(out / "r.json"),
    ]
    passed = runner.invoke(app, args + files)
    assert passed.exit_code == 0, passed.output
    assert "LLM calls in these traces: 1 with 412 input / 38 output tokens, simulated $" in passed.output
    assert {p.name for p in out.iterdir()} == {"j.xml", "r.html", "s.md", "r.json"}
    failing = _suite(tmp_path, '[[evaluators]]\nid = "Builtin.Refusal"\nmin_mean = 0.9\n')
    assert runner.invoke(app, ["eval", "run", str(failing)]).exit_code == 1
    bad = _suite(tmp_path, '[[evaluators]]\nid = "Builtin.Nope"\n')
    result = runner.invoke(app, ["eval", "run", str(bad)])
    assert result.exit_code == 2
    assert runner.invoke(app, ["eval", "run", str(tmp_path / "missing.toml")]).exit_code == 2
    listing = runner.invoke(app, ["eval", "list"])
    assert listing.exit_code == 0 and "Builtin.GoalSuccessRate" in listing.output


def test_cli_shows_names_from_the_suite_and_traces_escaped(
    tmp_path: Path, hostile_text: tuple[str, ...], shown_safely: Callable[..., None]
) -> None:
    """A suite's name and its custom evaluators' ids are text from a file: ``x[/]`` stopped `eval run` with a
    MarkupError once every score was computed, ``[bold red]`` restyled the table and escapes reached the terminal.
    A trace with a lone surrogate is bad input (exit 2 naming its line), not a traceback."""
    shutil.copy(EXAMPLES / "traces.jsonl", tmp_path / "traces.jsonl")
    evaluators = "".join(
        f'[[evaluators]]\nid = {json.dumps("Custom." + text)}\ntype = "keywords"\n'
        'options = { keywords = ["order"], mode = "any" }\n'
        for text in hostile_text
    )
    name = "[bold red]boom x[/] \u202eevil"  # a title no wider than the table, so it is not wrapped
    suite = tmp_path / "suite.toml"
    suite.write_text(f'[suite]\nname = {json.dumps(name)}\ntraces = ["traces.jsonl"]\ncache = ""\n{evaluators}')
    result = CliRunner().invoke(app, ["eval", "run", str(suite)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    shown_safely(result.output, name, *(f"Custom.{text}" for text in hostile_text))
    as_json = CliRunner().invoke(app, ["eval", "run", str(suite), "--json"])
    assert as_json.stdout.isascii() and json.loads(as_json.stdout)["suite"] == name
    (tmp_path / "traces.jsonl").write_text(json.dumps({"id": "s", "traces": [{"id": "t", "input": "\ud800"}]}))
    result = CliRunner().invoke(app, ["eval", "run", str(suite)])
    assert result.exit_code == 2
    assert "traces.jsonl:1: $.traces[0].input: contains a lone surrogate" in " ".join(result.output.split())


def test_cli_refuses_a_trace_with_a_lone_surrogate_as_bad_input(tmp_path: Path) -> None:
    """A lone surrogate has no UTF-8 form: accepted, it crashed the JSON and HTML writers and no report was left."""
    suite = _suite(tmp_path, '[[evaluators]]\nid = "Builtin.Helpfulness"\n')
    turn = {"id": "t", "input": "Where is my order?", "output": "It ships \ud800 Friday."}
    (tmp_path / "traces.jsonl").write_text(json.dumps({"id": "s", "traces": [turn]}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["eval", "run", str(suite), "--report", str(out / "r.json"), "--html", str(out / "r.html")]
    )
    assert result.exit_code == 2, result.output
    assert "traces.jsonl:1: $.traces[0].output: contains a lone surrogate" in " ".join(result.output.split())


def test_suite_errors_are_actionable(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"Builtin\.Nope.*known evaluators"):
        load_suite(_suite(tmp_path, '[[evaluators]]\nid = "Builtin.Nope"\n')).build_evaluators()
    with pytest.raises(SuiteError, match="min_mean"):
        load_suite(_suite(tmp_path, '[[evaluators]]\nid = "Builtin.Refusal"\nmin_mean = 3\n'))
    with pytest.raises(SuiteError, match="invalid TOML"):
        load_suite(_suite(tmp_path, "[[evaluators]\n"))
    missing = tmp_path / "nofiles.toml"
    missing.write_text('[suite]\nname = "x"\ntraces = ["none/*.jsonl"]\n[[evaluators]]\nid = "Builtin.Refusal"\n')
    with pytest.raises(SuiteError, match="matches no file"):
        load_suite(missing).sessions()


def test_custom_evaluators_in_python_and_in_the_suite(tmp_path: Path, accelerator) -> None:  # type: ignore[no-untyped-def]
    @evaluator("Custom.ShortReply", level="trace")
    def short_reply(target: Target) -> float:
        """Replies under 20 words."""
        return 1.0 if len(target.turn.output.split()) < 20 else 0.0

    session = Session(id="s", traces=[Trace(id="t", input="hi", output="Hello! How can I help?")])
    (result,) = evaluate([session], [create_evaluator("Custom.ShortReply")], models=Models(accelerator))
    assert result.passed and result.evaluator == "Custom.ShortReply"
    sys.path.insert(0, str(HERE))
    try:
        suite = _suite(
            tmp_path,
            '[[evaluators]]\nid = "Custom.Refund"\ntype = "judge"\noptions = { judge = "judges:mentions_refund" }\n'
            '[[evaluators]]\nid = "Custom.Keywords"\ntype = "keywords"\n'
            'options = { keywords = ["order"], mode = "any" }\n',
        )
        outcome = EvaluationSuite.from_file(suite, accelerator=accelerator).run()
    finally:
        sys.path.remove(str(HERE))
    refund = [r for r in outcome.results if r.evaluator == "Custom.Refund"]
    assert len(refund) == 5 and {r.explanation for r in refund} == {"mentions the refund", "no refund mentioned"}
    keywords = [r for r in outcome.results if r.evaluator == "Custom.Keywords"]
    assert [r.passed for r in keywords] == [
        "order" in t.output.lower() for s in load_sessions(suite.parent / "traces.jsonl") for t in s.traces
    ]
    with pytest.raises(UnknownEvaluatorError):
        create_evaluator("Custom.NeverDefined")


def test_reference_similarity_and_bad_judges(accelerator) -> None:  # type: ignore[no-untyped-def]
    from agentcore.evaluations import EvaluationError, TraceReference
    from agentcore.evaluations.custom import JudgeEvaluator, ReferenceSimilarity, RuleSpec, build_rule

    reference = TraceReference(expected_response="Your order ships on Friday.")
    close = Trace(id="t1", input="When does it ship?", output="It ships this Friday.", reference=reference)
    far = Trace(id="t2", input="When does it ship?", output="Our stores open at nine.", reference=reference)
    similarity = ReferenceSimilarity(RuleSpec(id="Custom.Ref", type="reference_similarity"))
    near_result, far_result = evaluate([Session(id="s", traces=[close, far])], [similarity], models=Models(accelerator))
    assert near_result.raw_score > far_result.raw_score
    out_of_range = JudgeEvaluator(RuleSpec(id="Custom.J", type="judge"), judge=lambda target: 7.0)
    with pytest.raises(EvaluationError, match=r"returned score 7\.0; scores must lie in \[0, 1\]"):
        evaluate([Session(id="s", traces=[close])], [out_of_range], models=Models(accelerator))
    with pytest.raises(EvaluationError, match=r"is not a reference; use 'package\.module:name'"):
        build_rule(RuleSpec(id="Custom.J", type="judge", judge="no_colon"))
    with pytest.raises(EvaluationError, match="unknown type 'llm'"):
        build_rule(RuleSpec(id="Custom.X", type="llm"))
