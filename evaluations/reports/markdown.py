"""Markdown summary for CI step summaries (``$GITHUB_STEP_SUMMARY``): one table row per evaluator, then failures."""

from __future__ import annotations

from agentcore.evaluations.outcome import Outcome
from agentcore.evaluations.reports.cost import cost_note, cost_rows, ran

_MAX_FAILURES = 20


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(outcome: Outcome) -> str:
    verdict = "✅ passed" if outcome.passed else "❌ failed"
    lines = [
        f"## Evaluation: {outcome.suite} — {verdict}",
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
            f"| {summary.evaluator} | {summary.level.value} | {summary.count} | {summary.coverage:.0%} "
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
                f"| {result.evaluator} | {_cell(result.qualified_id)} | {result.label} | {_cell(result.explanation)} |"
            )
        if len(failures) > _MAX_FAILURES:
            lines.append(f"\n…and {len(failures) - _MAX_FAILURES} more (see the JSON or JUnit report).")
    return "\n".join(lines) + "\n"
