"""``index.html`` of the report folder: the summary tables on one page, with links to every detailed file."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentcore.demo.app import DemoReport
    from agentcore.demo.llm_costs import LLMCosts

_STYLE = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left}
th{background:#f6f8fa}.ok{color:#1a7f37}.bad{color:#cf222e}img{max-width:48%;margin-right:1%}"""

LINKS = (
    ("evaluation.html", "evaluation report"),
    ("evaluation-junit.xml", "JUnit"),
    ("transcripts.md", "transcripts"),
    ("audit.jsonl", "audit log export"),
    ("audit-verify.json", "audit verification"),
    ("accel-receipts.json", "accelerator receipts"),
    ("accel-costs.json", "simulation reports"),
    ("traces.jsonl", "recorded traces"),
    ("suite.toml", "evaluation suite (rerun: agentcore eval run suite.toml)"),
    ("summary.json", "summary (JSON)"),
)


def _table(head: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def render_index(report: DemoReport, charts: list[str]) -> str:
    verdict = '<b class="ok">passed</b>' if report.passed else '<b class="bad">FAILED</b>'
    d, m, e = report.decisions, report.memory, report.evaluation
    sections = [
        f"<h1>agentcore demo: retail customer service</h1><p>{len(report.sessions)} conversations, {verdict} "
        f"in {report.seconds:.1f} s. Audit chain: {report.audit.get('records')} records, "
        f"{'verified' if report.audit.get('ok') else 'BROKEN'}.</p>",
        "<h2>Conversations</h2>"
        + _table(
            ("session", "scenario", "customer", "calls", "as scripted"),
            [
                (s.session_id, s.title, s.customer or "-", s.calls, "yes" if s.as_scripted else "; ".join(s.off_script))
                for s in report.sessions
            ],
        ),
        "<h2>Gateway decisions</h2>"
        + _table(
            ("decision", "calls", "rules"),
            [
                ("allowed", d.allowed, ""),
                ("denied", d.denied, ", ".join(f"{r} ({n})" for r, n in d.top_denials)),
                ("needed approval", d.needed_approval, ", ".join(f"{r} ({n})" for r, n in d.approval_rules)),
                ("approved", d.approved, ", ".join(d.approvers)),
            ],
        ),
        "<h2>Memory</h2>"
        + _table(
            ("preferences", "session summaries", "events stored", "carried over"),
            [
                (
                    m.preferences,
                    m.summaries,
                    m.events,
                    "; ".join(f"{c['customer']}: {c['kind']}" for c in m.carried_over),
                )
            ],
        ),
        f"<h2>Evaluation ({escape(e.suite)})</h2>"
        + _table(
            ("evaluator", "level", "n", "mean", "pass rate", "gates", "passed"),
            [
                (
                    x.evaluator,
                    x.level,
                    x.count,
                    f"{x.mean:.3f}",
                    f"{x.pass_rate:.0%}",
                    ", ".join(x.gates) or "reported",
                    "yes" if x.passed else "NO",
                )
                for x in e.evaluators
            ],
        ),
    ]
    if report.costs is not None:
        c = report.costs
        sections.append(
            f"<h2>Model work</h2><p>{c.calls} encoder calls, {c.texts} texts, {c.tokens} tokens; {c.cpu_seconds:.2f} s "
            "measured CPU time on this machine. Latency, $ and J below are simulated.</p>"
            + _table(
                ("fleet", "p50 ms", "p99 ms", "busy core-s", "$ busy", "J busy", "$ fleet held"),
                [
                    (
                        f.profile,
                        f"{f.p50_ms:.2f}",
                        f"{f.p99_ms:.2f}",
                        f"{f.busy_core_seconds:.3g}",
                        f"{f.busy_usd:.2g}",
                        f"{f.busy_joules:.3g}",
                        f"{f.held_usd:.3g}",
                    )
                    for f in c.fleets
                ],
            )
            + "".join(f'<img src="{escape(name)}" alt="{escape(name)}">' for name in charts)
        )
    else:
        sections.append(f"<h2>Model work</h2><p>Simulated costs unavailable: {escape(str(report.costs_error))}</p>")
    if report.llm_costs is not None:
        sections.append(_llm_section(report.llm_costs))
    links = "".join(f'<li><a href="{escape(f)}">{escape(what)}</a></li>' for f, what in LINKS if f in report.files)
    sections.append(f"<h2>Files</h2><ul>{links}</ul>")
    body = "\n".join(sections)
    head = f'<meta charset="utf-8"><title>agentcore demo</title><style>{_STYLE}</style>'
    return f'<!DOCTYPE html><html lang="en"><head>{head}</head><body>{body}</body></html>\n'


def _llm_section(llm: LLMCosts) -> str:
    """Cost per conversation if an LLM drove the demo: the money an agent really spends (simulated)."""
    cost = llm.cost
    count = max(len(cost.sessions), 1)
    rows: list[tuple[object, ...]] = [
        (device, f"{cost.per_session(device):.5f}", f"{1000 * cost.per_session(device):.2f}",
         f"{sum(s.joules[device] for s in cost.sessions) / count:,.0f}")
        for device in cost.devices
    ]  # fmt: skip
    cheapest = min(cost.devices, key=cost.per_session)
    return (
        f"<h2>LLM cost per conversation</h2><p>{cost.priced_calls} model calls, {cost.input_tokens:,} input and "
        f"{cost.output_tokens:,} output tokens over {len(cost.sessions)} conversations. Assumed: "
        f"{escape(llm.assumptions)}. Simulated; cheapest here: {escape(cheapest)}.</p>"
        + _table(("device", "$ per conversation", "$ per 1,000", "J per conversation"), rows)
        + "<p>The encoder work above is a few milliseconds of tiny batches: it is latency-bound (fixed per-call "
        "costs and link latency dominate), so Trn3's larger compute and bandwidth barely shorten it while its "
        "higher chip price and power still apply. LLM serving at saturation is where Trn3 gains (4.4x compute, "
        "~4x bandwidth per UltraServer; its ~1.4x tokens per joule holds by construction, as Trn3's unpublished power "
        "is derived from that claim); see docs/simulator.md, LLM serving.</p>"
    )
