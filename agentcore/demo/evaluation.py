"""Run the demo's evaluation suite over the recorded traces and write its HTML, JUnit, JSON and Markdown reports.

The suite file sits in the report folder next to ``traces.jsonl``, so CI can rerun exactly this evaluation with
``agentcore eval run <folder>/suite.toml``. Model work is charged to the demo's accelerator (and ledger).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from agentcore.accel.runtime import Accelerator
from agentcore.evaluations.api import EvaluationSuite
from agentcore.evaluations.reports import render_html, render_json, render_junit, render_markdown

REPORTS = {"evaluation.html": render_html, "evaluation-junit.xml": render_junit, "evaluation.json": render_json,
           "evaluation.md": render_markdown}  # fmt: skip


GATE_NAMES = {"min_pass_rate": "pass rate ≥", "min_mean": "mean ≥", "min_score": "min ≥", "max_mean": "mean ≤",
              "max_regression": "drop ≤"}  # fmt: skip


class EvaluatorLine(BaseModel):
    evaluator: str
    level: str
    count: int
    mean: float
    pass_rate: float
    gates: list[str]
    passed: bool


class EvaluationSummary(BaseModel):
    suite: str
    sessions: int
    evaluators: list[EvaluatorLine]
    passed: bool


def evaluate_traces(suite_file: Path, out: Path, accelerator: Accelerator) -> EvaluationSummary:
    """Run the suite fresh (no result cache: a demo run always scores what it just recorded) and render it."""
    outcome = EvaluationSuite.from_file(suite_file, accelerator=accelerator).run(cache=False)
    for name, render in REPORTS.items():
        (out / name).write_text(render(outcome), encoding="utf-8")
    lines = [
        EvaluatorLine(
            evaluator=s.evaluator,
            level=s.level.value,
            count=s.count,
            mean=s.mean,
            pass_rate=s.pass_rate,
            gates=[f"{GATE_NAMES.get(c.name, c.name)} {c.threshold:g}" for c in s.checks],
            passed=s.passed,
        )
        for s in outcome.summaries
    ]
    return EvaluationSummary(suite=outcome.suite, sessions=outcome.sessions, evaluators=lines, passed=outcome.passed)
