"""Markdown summary for CI step summaries (``$GITHUB_STEP_SUMMARY``): one table row per evaluator, then failures."""

from __future__ import annotations

import re

from agentcore.evaluations.outcome import Outcome
from agentcore.evaluations.reports.cost import cost_note, cost_rows, ran
from agentcore.text import printable

_MAX_FAILURES = 20
#: every line break CommonMark or a renderer may honour (a lone CR ends a line too): each would end the table row
_BREAKS = re.compile("\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
#: what Markdown or inline HTML would read as markup: a pipe starts a cell, ``<`` a tag, ``[`` a link, ...
_MARKUP = re.compile(r"([\\`*_\[\]<>|~&#!])")


def _cell(text: str) -> str:
    """Text from a trace or suite as one literal table cell (or heading): it cannot end the row, forge a row or a
    verdict, or become a link, an image or HTML."""
    return _MARKUP.sub(r"\\\1", printable(_BREAKS.sub(" ", text)))


def render_markdown(outcome: Outcome) -> str:
    verdict = "✅ passed" if outcome.passed else "❌ failed"
    lines = [
        f"## Evaluation: {_cell(outcome.suite)} — {verdict}",
        "",
        f"{ran(outcome)}{outcome.sessions} sessions, {len(outcome.results)} results.",
        "",
        "| Evaluator | Level | Judged | Coverage | Mean | Min | Pass rate | vs baseline | Gates |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for summary in outcome.summaries:
        delta = "" if summary.regression is None else f"{-summary.regression:+.3f}"
        gates = ", ".join(f"{'✅' if c.passed else '❌'} {c.name} {c.threshold:g}" for c in summary.checks) or "—"
        lines.append(
            f"| {_cell(summary.evaluator)} | {summary.level.value} | {summary.count} | {summary.coverage:.0%} "
            f"| {summary.mean:.3f} | {summary.minimum:.3f} | {summary.pass_rate:.0%} | {delta} | {gates} |"
        )
    if outcome.llm_cost is not None:
        devices = outcome.llm_cost.devices
        lines += [
            "",
            "### Simulated LLM serving cost",
            "",
            cost_note(outcome.llm_cost),
            "",
            "| Tenant | " + " | ".join(devices) + " |",
            "|---|" + "---:|" * len(devices),
        ]
        lines += [f"| {_cell(label)} | " + " | ".join(cells) + " |" for label, cells in cost_rows(outcome.llm_cost)]
    failures = [result for result in outcome.results if result.judged and not result.passed]
    if failures:
        lines += [
            "",
            f"### Failing results ({len(failures)})",
            "",
            "| Evaluator | Target | Label | Explanation |",
            "|---|---|---|---|",
        ]
        for result in failures[:_MAX_FAILURES]:
            lines.append(
                f"| {_cell(result.evaluator)} | {_cell(result.qualified_id)} | {_cell(result.label)} "
                f"| {_cell(result.explanation)} |"
            )
        if len(failures) > _MAX_FAILURES:
            lines.append(f"\n…and {len(failures) - _MAX_FAILURES} more (see the JSON or JUnit report).")
    return "\n".join(lines) + "\n"
