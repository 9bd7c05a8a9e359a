"""One self-contained HTML page: summary table, inline SVG charts (score distribution per evaluator, pass/fail
counts, change versus baseline) and the failing results. No scripts, no external assets."""

from __future__ import annotations

from html import escape

from agentcore.accel.charts import bar_chart, grouped_bar_chart
from agentcore.evaluations.outcome import EvaluatorSummary, Outcome
from agentcore.evaluations.reports.cost import cost_note, cost_rows, ran, usd

_BINS = 10
_PASS, _FAIL = "#2e7d32", "#c62828"
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;margin:1rem 0}"
    "td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}th{background:#f3f3f3}"
    ".pass{color:#2e7d32}.fail{color:#c62828}.charts{display:flex;flex-wrap:wrap;gap:1rem}figure{margin:0}"
    "figcaption{font-size:.85rem;color:#555}svg.chart{max-width:100%;height:auto}"
)


def _histogram(outcome: Outcome, summary: EvaluatorSummary) -> str:
    """Judged results per score bin, the count written at each bar's end."""
    counts = [0] * _BINS
    for result in outcome.results:
        if result.evaluator == summary.evaluator and result.judged:
            counts[min(int(result.score * _BINS), _BINS - 1)] += 1
    bins = [(f"{i / _BINS:.1f}–{(i + 1) / _BINS:.1f}", float(count)) for i, count in enumerate(counts)]
    chart = bar_chart(
        bins, title=f"{summary.evaluator} score distribution", category_label="score", value_label="results",
        whole=True, css="score-distribution",
    )  # fmt: skip
    caption = f"{escape(summary.evaluator)}: {summary.count} judged, mean {summary.mean:.2f}"
    if summary.not_applicable:
        caption += f", {summary.not_applicable} not applicable"
    return f"<figure>{chart}<figcaption>{caption}</figcaption></figure>"


def _pass_fail(outcome: Outcome) -> str:
    passed = [round(s.pass_rate * s.count) for s in outcome.summaries]
    return grouped_bar_chart(
        [s.evaluator for s in outcome.summaries],
        {"passed": passed, "failed": [s.count - p for s, p in zip(outcome.summaries, passed, strict=True)]},
        title="Pass/fail counts per evaluator", category_label="evaluator", value_label="judged results",
        stacked=True, whole=True, colours=(_PASS, _FAIL), css="pass-fail",
    )  # fmt: skip


def _regressions(outcome: Outcome) -> str:
    compared = [summary for summary in outcome.summaries if summary.regression is not None]
    if not compared:
        return '<p class="no-baseline">No baseline given: run with <code>--baseline</code> to chart changes.</p>'
    return bar_chart(
        [(s.evaluator, -(s.regression or 0.0)) for s in compared], title="Change of mean score versus baseline",
        category_label="evaluator", value_label="mean score now minus baseline mean",
        value_format=lambda change: f"{change:+.3f}" if change else "0", css="regressions",
    )  # fmt: skip


def _summary_row(summary: EvaluatorSummary) -> str:
    gates = ", ".join(
        f'<span class="{"pass" if c.passed else "fail"}">{c.name} {c.threshold:g} ({c.actual:.3g})</span>'
        for c in summary.checks
    )
    cells = (
        escape(summary.evaluator),
        summary.level.value,
        str(summary.count),
        f"{summary.coverage:.0%}",
        f"{summary.mean:.3f}",
        f"{summary.minimum:.3f}",
        f"{summary.pass_rate:.0%}",
        "—" if summary.regression is None else f"{-summary.regression:+.3f}",
        gates,
    )
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _llm_cost(outcome: Outcome) -> str:
    """Simulated spend per tenant and per session on each device, or nothing when the traces made no LLM call."""
    cost = outcome.llm_cost
    if cost is None:
        return ""
    head = "".join(f"<th>{escape(device)} (simulated)</th>" for device in cost.devices)
    totals = "".join(
        f"<tr><td>{escape(label)}</td>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"
        for label, cells in cost_rows(cost)
    )
    sessions = "".join(
        f"<tr><td>{escape(entry.session)}</td><td>{escape(entry.tenant)}</td><td>{entry.calls}</td>"
        f"<td>{entry.input_tokens:,}</td><td>{entry.output_tokens:,}</td>"
        + "".join(f"<td>{usd(entry.usd[device])}</td>" for device in cost.devices)
        + "</tr>"
        for entry in cost.sessions
    )
    return (
        f'<h2>Simulated LLM serving cost</h2><p class="simulated">{escape(cost_note(cost))}</p>'
        f'<table class="llm-cost"><tr><th>Tenant</th>{head}</tr>{totals}</table>'
        f'<table class="llm-sessions"><tr><th>Session</th><th>Tenant</th><th>LLM calls</th><th>Input tokens</th>'
        f"<th>Output tokens</th>{head}</tr>{sessions}</table>"
    )


def render_html(outcome: Outcome) -> str:
    verdict = '<span class="pass">passed</span>' if outcome.passed else '<span class="fail">failed</span>'
    rows = "".join(_summary_row(summary) for summary in outcome.summaries)
    failures = "".join(
        f"<tr><td>{escape(r.evaluator)}</td><td>{escape(r.qualified_id)}</td>"
        f"<td>{escape(r.label)}</td><td>{escape(r.explanation)}</td></tr>"
        for r in outcome.results
        if r.judged and not r.passed
    )
    histograms = "".join(_histogram(outcome, summary) for summary in outcome.summaries)
    title = escape(outcome.suite)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Evaluation: {title}</title><style>{_STYLE}</style></head>
<body><h1>Evaluation: {title} — {verdict}</h1>
<p>{ran(outcome)}{outcome.sessions} sessions, {len(outcome.results)} results.</p>
<table><tr><th>Evaluator</th><th>Level</th><th>Judged</th><th>Coverage</th><th>Mean</th><th>Min</th><th>Pass rate</th>
<th>vs baseline</th><th>Gates</th></tr>
{rows}</table>
<h2>Score distribution per evaluator</h2><div class="charts">{histograms}</div>
<h2>Pass / fail</h2>{_pass_fail(outcome)}
<h2>Change versus baseline</h2>{_regressions(outcome)}
{_llm_cost(outcome)}
<h2>Failing results</h2>
<table><tr><th>Evaluator</th><th>Target</th><th>Label</th><th>Explanation</th></tr>{failures}</table>
</body></html>
"""
