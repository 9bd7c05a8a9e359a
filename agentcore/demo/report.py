"""``index.html`` of the report folder: what happened, in tables and charts, with every term explained in place.

Charts are inline SVG from :mod:`agentcore.accel.charts` (readable ticks, whole labels) and every amount goes
through :mod:`agentcore.accel.units`, so a number here reads like the same number in the console and the CLI.
Simulated figures are labelled simulated; measured ones say where they were measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from agentcore.accel.charts import grouped_bar_chart
from agentcore.accel.units import joules, number, seconds, usd, usd_scale

if TYPE_CHECKING:
    from agentcore.demo.app import DemoReport, MemorySummary, SessionSummary
    from agentcore.demo.evaluation import EvaluationSummary
    from agentcore.demo.llm_costs import LLMCosts

_STYLE = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2328;line-height:1.45}
table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left}
th{background:#f6f8fa}.ok{color:#1a7f37}.bad{color:#cf222e}figure{margin:.5rem 0 1rem}
svg.chart{max-width:100%;height:auto}.note{color:#57606a;font-size:.92rem}dt{font-weight:bold}
dd{margin:0 0 .4rem 1.2rem}.charts{display:flex;flex-wrap:wrap;gap:1rem}"""
_DECISION_COLOURS = ("#1a7f37", "#cf222e", "#9a6700")
_CONVERSATION_TERMS = (
    (
        "session",
        "Opens the transcript: every turn, each tool call with the gateway's decision, the "
        "deciding rule and the reason, and the supervisor's approval where one was needed.",
    ),
    (
        "customer",
        "Whom the gateway acted for: the customer an identification tool found in that "
        "conversation. A conversation that never identified anyone stays a guest (not identified).",
    ),
    (
        "outcomes",
        "What happened to the session's tool calls: ok (allowed and run), denied (by a "
        "policy rule), needs approval / approved (held for a supervisor, then run).",
    ),
    (
        "as scripted",
        "Every tool call got the outcome its scenario expects. A violation scenario is as "
        "scripted when the gateway DENIED the call: that denial is the point of the scenario.",
    ),
)
_EVALUATION_TERMS = (
    (
        "gate",
        "A threshold that fails the run (and the CI job) when missed. An evaluator with no gate "
        "is reported only: its score is shown to watch trends, it cannot fail the run.",
    ),
    (
        "n, level",
        "How many items were judged, and what an item is: one tool call, one turn (trace) or "
        "one whole conversation (session).",
    ),
    (
        "Refusal",
        "Scores how much a reply refuses. On a violation turn the gateway denied the call and "
        "the agent told the customer it cannot do that: a refusal there is the correct behaviour, which "
        "is why Refusal is reported, not gated, and a low mean is expected.",
    ),
)
_FLEET_TERMS = (
    ("p50 / p99 latency", "Simulated time from a call's arrival to its result, half / 99 % of calls."),
    ("busy core time", "NeuronCore time the calls actually used."),
    ("$ busy, energy busy", "What that busy time costs (and draws) on a shared, pay-per-use fleet."),
    (
        "$ fleet held",
        "Renting the whole UltraServer for the demo's span, idle time included: why a "
        "few milliseconds of work cost dollars on a dedicated fleet.",
    ),
)

LINKS = (
    ("transcripts.html", "transcripts: every turn, tool call, gateway decision and reason"),
    ("transcripts.md", "transcripts (Markdown)"),
    ("evaluation.html", "evaluation report"),
    ("evaluation-junit.xml", "JUnit"),
    ("audit.jsonl", "audit log export"),
    ("audit-verify.json", "audit verification"),
    ("accel-receipts.json", "accelerator receipts"),
    ("accel-costs.json", "simulation reports"),
    ("traces.jsonl", "recorded traces"),
    ("llm-traces.jsonl", "traces with the assumed LLM calls (rerun: agentcore accel price-traces llm-traces.jsonl)"),
    ("suite.toml", "evaluation suite (rerun: agentcore eval run suite.toml)"),
    ("summary.json", "summary (JSON)"),
)


def _cell(value: object) -> str:
    return value.html if isinstance(value, _Html) else escape(str(value))


class _Html:
    """A table cell that is already markup (a link), not text to escape."""

    def __init__(self, html: str) -> None:
        self.html = html


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], *, css: str = "") -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><tr>{cells}</tr>{body}</table>'


def _terms(pairs: Sequence[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{escape(t)}</dt><dd>{escape(d)}</dd>" for t, d in pairs) + "</dl>"


def _figure(svg: str) -> str:
    return f"<figure>{svg}</figure>"


def render_index(report: DemoReport, charts: Mapping[str, str]) -> str:
    """The page; ``charts`` maps each simulator chart's file name to its SVG (embedded, and linked)."""
    verdict = '<b class="ok">passed</b>' if report.passed else '<b class="bad">FAILED</b>'
    sections = [
        f"<h1>agentcore demo: retail customer service</h1><p>{len(report.sessions)} conversations, {verdict} "
        f"in {report.seconds:.1f} s. Audit chain: {report.audit.get('records')} records, "
        f"{'verified' if report.audit.get('ok') else 'BROKEN'}.</p>"
        '<p class="note">A scripted agent served customers of a generated shop through the agentcore gateway: '
        "every tool call was decided by the retail policy, recorded in the hash-chained audit log, and remembered "
        "in memory. Everything ran for real on this machine (SQLite, the gateway, the ONNX encoder); only the "
        "Trainium and H100 devices are <b>simulated</b> — their latency, $ and joules come from accel's cost "
        "model, not from a device. <b>Measured</b> figures (CPU seconds) were measured here.</p>",
        _conversations(report.sessions),
        _decisions(report),
        _memory(report.memory, report.sessions),
        _evaluation(report.evaluation),
    ]
    sections.append(_model_work(report, charts))
    if report.llm_costs is not None:
        sections.append(_llm_section(report.llm_costs))
    links = "".join(f'<li><a href="{escape(f)}">{escape(what)}</a></li>' for f, what in LINKS if f in report.files)
    sections.append(f"<h2>Files</h2><ul>{links}</ul>")
    body = "\n".join(sections)
    head = f'<meta charset="utf-8"><title>agentcore demo</title><style>{_STYLE}</style>'
    return f'<!DOCTYPE html><html lang="en"><head>{head}</head><body>{body}</body></html>\n'


def _conversations(sessions: Sequence[SessionSummary]) -> str:
    rows = []
    for s in sessions:
        link = _Html(f'<a class="transcript" href="transcripts.html#{escape(s.session_id)}">{escape(s.session_id)}</a>')
        decided = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(s.outcomes.items()))
        scripted = "yes" if s.as_scripted else "NO: " + "; ".join(s.off_script)
        rows.append((link, s.title, s.customer or "not identified", s.calls, decided or "-", scripted))
    return (
        '<h2 id="conversations">Conversations</h2>'
        + _table(("session", "scenario", "customer", "tool calls", "outcomes", "as scripted"), rows, css="sessions")
        + _terms(_CONVERSATION_TERMS)
    )


def _decisions(report: DemoReport) -> str:
    d = report.decisions
    tools = list(d.by_tool)
    chart = grouped_bar_chart(
        tools,
        {label: [float(d.by_tool[t].get(effect, 0)) for t in tools]
         for label, effect in (("allowed", "allow"), ("denied", "deny"), ("needed approval", "needs_approval"))},
        title="Gateway decisions by tool", category_label="tool", value_label="tool calls decided",
        stacked=True, whole=True, colours=_DECISION_COLOURS, css="decisions",
    )  # fmt: skip
    return (
        "<h2>Gateway decisions</h2>"
        + _figure(chart)
        + _table(
            ("decision", "calls", "rules (calls)"),
            [
                ("allowed", d.allowed, ""),
                ("denied", d.denied, ", ".join(f"{r} ({n})" for r, n in d.top_denials)),
                ("needed approval", d.needed_approval, ", ".join(f"{r} ({n})" for r, n in d.approval_rules)),
                ("approved", d.approved, ", ".join(d.approvers)),
            ],
        )
        + '<p class="note">Counted from the audit log. A rule name is the <code>rule</code> in '
        "<code>retail.policy</code> that decided; a denied call never reached the shop database.</p>"
    )


def _memory(memory: MemorySummary, sessions: Sequence[SessionSummary]) -> str:
    rows = []
    for item in memory.carried_over:
        customer, remembered_in = item["customer"], item["remembered_in"]
        later = [s.session_id for s in sessions if s.customer == customer and s.session_id != remembered_in]
        rows.append((item["customer"], item["kind"], item["value"], item["remembered_in"], ", ".join(later) or "-"))
    return (
        "<h2>Memory</h2>"
        + _table(
            ("preferences stored", "session summaries", "events stored"),
            [(memory.preferences, memory.summaries, memory.events)],
        )
        + "<p>Carried over: a preference remembered in one conversation and used in a later one, without the "
        "customer repeating it.</p>"
        + _table(("customer", "preference", "remembered value", "remembered in", "used in"), rows, css="carried")
    )


def _evaluation(evaluation: EvaluationSummary) -> str:
    rows = [
        (x.evaluator, x.level, x.count, f"{x.mean:.3f}", f"{x.pass_rate:.0%}", ", ".join(x.gates) or "reported only",
         "yes" if x.passed else "NO")
        for x in evaluation.evaluators
    ]  # fmt: skip
    return (
        f"<h2>Evaluation ({escape(evaluation.suite)})</h2>"
        + _table(("evaluator", "level", "n", "mean", "pass rate", "gate", "passed"), rows, css="evaluation")
        + _terms(_EVALUATION_TERMS)
    )


def _model_work(report: DemoReport, charts: Mapping[str, str]) -> str:
    c = report.costs
    if c is None:
        return f"<h2>Model work</h2><p>Simulated costs unavailable: {escape(str(report.costs_error))}</p>"
    busy_usd = usd_scale(max(f.busy_usd for f in c.fleets))
    held_usd = usd_scale(max(f.held_usd for f in c.fleets))
    rows = [
        (f.profile, seconds(f.p50_ms / 1000), seconds(f.p99_ms / 1000), seconds(f.busy_core_seconds),
         busy_usd(f.busy_usd), joules(f.busy_joules), held_usd(f.held_usd))
        for f in c.fleets
    ]  # fmt: skip
    figures = "".join(_figure(svg) for svg in charts.values())
    files = ", ".join(f'<a href="{escape(name)}">{escape(name)}</a>' for name in charts)
    return (
        f"<h2>Model work</h2><p>{c.calls:,} encoder calls ({c.texts:,} texts, {c.tokens:,} tokens) for intents, "
        f"memory and evaluators: {seconds(c.cpu_seconds)} of CPU time <b>measured</b> on this machine. The same "
        "calls, at the times they happened, replayed on two <b>simulated</b> fleets:</p>"
        + _table(
            ("fleet", "p50 latency", "p99 latency", "busy core time", "$ busy", "energy busy", "$ fleet held"),
            rows,
            css="fleets",
        )
        + _terms(_FLEET_TERMS)
        + f'<div class="charts">{figures}</div><p class="note">Chart files: {files}.</p>'
    )


def _llm_section(llm: LLMCosts) -> str:
    """Cost per conversation if an LLM drove the demo: the money an agent really spends (simulated)."""
    cost = llm.cost
    count = max(len(cost.sessions), 1)
    rows: list[tuple[object, ...]] = [
        (device, usd(cost.per_session(device)), usd(1000 * cost.per_session(device)),
         joules(sum(s.joules[device] for s in cost.sessions) / count))
        for device in cost.devices
    ]  # fmt: skip
    cheapest = min(cost.devices, key=cost.per_session)
    money = usd_scale(max((s.usd[d] for s in cost.sessions for d in cost.devices), default=0.0))
    chart = grouped_bar_chart(
        [s.session for s in cost.sessions], {device: [s.usd[device] for s in cost.sessions] for device in cost.devices},
        title=f"Simulated LLM cost per conversation ({cost.model})", category_label="conversation",
        value_label="simulated $ per conversation", value_format=money, css="llm-cost",
    )  # fmt: skip
    per_session = [
        (s.session, s.calls, number(s.input_tokens), number(s.output_tokens), *(money(s.usd[d]) for d in cost.devices))
        for s in cost.sessions
    ]
    return (
        f"<h2>LLM cost per conversation</h2><p>If <b>{escape(cost.model)}</b> had driven these conversations: "
        f"{cost.priced_calls:,} model calls, {cost.input_tokens:,} input and {cost.output_tokens:,} output tokens "
        f"over {len(cost.sessions)} conversations. Token counts are assumed: {escape(llm.assumptions)}. "
        f"Serving is <b>simulated</b>; cheapest here: {escape(cheapest)}.</p>"
        + _table(
            ("device", "$ per conversation", "$ per 1,000 conversations", "energy per conversation"), rows, css="llm"
        )
        + _figure(chart)
        + _table(
            ("conversation", "model calls", "input tokens", "output tokens", *(f"$ {d}" for d in cost.devices)),
            per_session,
            css="llm-sessions",
        )
        + '<p class="note">Money in µ$ (millionths of a dollar) and m$ (thousandths) where a whole-dollar figure '
        "would be a run of zeros. The encoder work above is a few milliseconds of tiny batches: it is "
        "latency-bound (fixed per-call costs and link latency dominate), so Trn3's larger compute and bandwidth "
        "barely shorten it while its higher chip price and power still apply. LLM serving at saturation is where "
        "Trn3 gains (4.4x compute, ~4x bandwidth per UltraServer; its ~1.4x tokens per joule holds by construction, "
        "as Trn3's unpublished power is derived from that claim); see docs/simulator.md, LLM serving.</p>"
    )
