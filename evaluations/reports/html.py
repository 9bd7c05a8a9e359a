"""One self-contained HTML page: summary table, inline SVG charts (score distribution per evaluator, pass/fail
counts, change versus baseline) and the failing results. No scripts, no external assets."""

from __future__ import annotations

from html import escape

from agentcore.evaluations.outcome import EvaluatorSummary, Outcome
from agentcore.evaluations.reports.cost import cost_note, cost_rows, ran, usd

_BINS = 10
_PASS, _FAIL, _BAR = "#2e7d32", "#c62828", "#1565c0"
_ROW, _LABEL_WIDTH, _WIDTH = 22, 260, 560
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;margin:1rem 0}"
    "td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}th{background:#f3f3f3}"
    ".pass{color:#2e7d32}.fail{color:#c62828}.charts{display:flex;flex-wrap:wrap;gap:1rem}figure{margin:0}"
    "figcaption{font-size:.85rem;color:#555}"
)


def _svg(css_class: str, width: float, height: float, title: str, body: str) -> str:
    return (
        f'<svg class="chart {css_class}" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{body}</svg>'
    )


def _rect(x: float, y: float, width: float, height: float, fill: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" fill="{fill}">'
        f"<title>{escape(tip)}</title></rect>"
    )


def _label(y: float, text: str) -> str:
    return f'<text x="0" y="{y + 14}" font-size="12">{escape(text)}</text>'


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 10) -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">{escape(text)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#888"/>'


def _histogram(outcome: Outcome, summary: EvaluatorSummary) -> str:
    """Judged results per score bin: a count axis on the left, score ticks below, each bar's count above it."""
    counts = [0] * _BINS
    for result in outcome.results:
        if result.evaluator == summary.evaluator and result.judged:
            counts[min(int(result.score * _BINS), _BINS - 1)] += 1
    top = max(counts) or 1
    left, bottom, width, height = 28, 30, 260, 130
    plot_w, plot_h = width - left - 6, height - bottom - 14
    base = height - bottom
    parts = [_line(left, base, left + plot_w, base), _line(left, base, left, base - plot_h)]
    for tick in sorted({0, top // 2, top}):
        y = base - tick / top * plot_h
        parts += [_line(left - 3, y, left, y), _text(left - 5, y + 3, str(tick), anchor="end")]
    for score in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + score * plot_w
        parts += [_line(x, base, x, base + 3), _text(x, base + 13, f"{score:g}", anchor="middle")]
    parts.append(_text(left + plot_w / 2, height - 3, "score", anchor="middle"))
    parts.append(_text(2, 10, "results"))
    bin_w = plot_w / _BINS
    for i, count in enumerate(counts):
        bar = count / top * plot_h
        tip = f"{i / _BINS:.1f}–{(i + 1) / _BINS:.1f}: {count}"
        parts.append(_rect(left + i * bin_w + 1, base - bar, bin_w - 2, bar, _BAR, tip))
        if count:
            parts.append(_text(left + (i + 0.5) * bin_w, base - bar - 2, str(count), anchor="middle", size=9))
    chart = _svg("score-distribution", width, height, f"{summary.evaluator} score distribution", "".join(parts))
    caption = f"{escape(summary.evaluator)}: {summary.count} judged, mean {summary.mean:.2f}"
    if summary.not_applicable:
        caption += f", {summary.not_applicable} not applicable"
    return f"<figure>{chart}<figcaption>{caption}</figcaption></figure>"


def _pass_fail(outcome: Outcome) -> str:
    parts = []
    for index, summary in enumerate(outcome.summaries):
        y = index * _ROW + 5
        passed = round(summary.pass_rate * summary.count)
        failed = summary.count - passed
        scale = (_WIDTH - _LABEL_WIDTH - 10) / max(summary.count, 1)
        parts.append(_label(y, summary.evaluator))
        parts.append(_rect(_LABEL_WIDTH, y, passed * scale, 16, _PASS, f"passed {passed}"))
        parts.append(_rect(_LABEL_WIDTH + passed * scale, y, failed * scale, 16, _FAIL, f"failed {failed}"))
        parts.append(_text(_WIDTH - 4, y + 12, f"{passed} passed / {failed} failed", anchor="end"))
    height = _ROW * len(outcome.summaries) + 10
    return _svg("pass-fail", _WIDTH, height, "Pass/fail counts per evaluator", "".join(parts))


def _regressions(outcome: Outcome) -> str:
    compared = [summary for summary in outcome.summaries if summary.regression is not None]
    if not compared:
        return '<p class="no-baseline">No baseline given: run with <code>--baseline</code> to chart changes.</p>'
    middle = _LABEL_WIDTH + (_WIDTH - _LABEL_WIDTH) / 2
    span = (_WIDTH - _LABEL_WIDTH) / 2 - 10
    height = _ROW * len(compared) + 10
    parts = [f'<line x1="{middle}" y1="0" x2="{middle}" y2="{height}" stroke="#888"/>']
    for index, summary in enumerate(compared):
        change = -(summary.regression or 0.0)
        y = index * _ROW + 5
        length = max(min(abs(change), 1.0) * span, 1.0)
        colour = _PASS if summary.passed else _FAIL
        parts.append(_label(y, summary.evaluator))
        tip = f"{change:+.3f} vs baseline {summary.baseline_mean:.3f}"
        parts.append(_rect(middle if change >= 0 else middle - length, y, length, 16, colour, tip))
        end = middle + length + 4 if change >= 0 else middle - length - 4
        parts.append(_text(end, y + 12, f"{change:+.3f}", anchor="start" if change >= 0 else "end"))
    parts += [_text(middle + k * span, height + 12, f"{k:+d}" if k else "0", anchor="middle") for k in (-1, 0, 1)]
    height += 16
    return _svg("regressions", _WIDTH, height, "Change of mean score versus baseline", "".join(parts))


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
