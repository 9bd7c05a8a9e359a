"""The conversations as a reviewer reads them: what the agent said and what the gateway decided, and why.

One view (:func:`conversations`) feeds both the Markdown file and the HTML page the report links to, so the two
and the report's conversation table can never disagree on a session's customer or a call's decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from pydantic import BaseModel

from agentcore.demo.governance import APPROVER
from agentcore.demo.runner import PlayedSession
from agentcore.demo.session import ToolOutcome

_VERDICT = {
    "ok": "allowed",
    "denied": "DENIED",
    "invalid": "rejected (invalid arguments)",
    "needs_approval": "needs approval",
    "approved": f"approved by {APPROVER}, then run",
    "error": "allowed, but the tool failed",
}


class Call(BaseModel):
    """One tool call: how it was written, the gateway's verdict, the deciding rules and the reason given."""

    text: str
    verdict: str
    rules: list[str]
    reason: str


class Turn(BaseModel):
    customer: str
    calls: list[Call]
    agent: str


class Conversation(BaseModel):
    session_id: str
    title: str
    customer: str | None
    as_scripted: bool
    off_script: list[str]
    turns: list[Turn]

    @property
    def who(self) -> str:
        """The customer the gateway acted for (identified in the conversation), or why there was none."""
        return self.customer or "not identified (a guest throughout: no identification call succeeded)"

    @property
    def verdict(self) -> str:
        return "as scripted" if self.as_scripted else "OFF SCRIPT: " + "; ".join(self.off_script)


def _call(outcome: ToolOutcome) -> Call:
    arguments = ", ".join(f"{k}={v!r}" for k, v in outcome.arguments.items())
    reason = outcome.message if outcome.status in ("denied", "invalid", "needs_approval", "error") else ""
    return Call(text=f"{outcome.tool}({arguments})", verdict=_VERDICT.get(outcome.status, outcome.status),
                rules=outcome.rules, reason=reason)  # fmt: skip


def conversations(sessions: Sequence[PlayedSession]) -> list[Conversation]:
    """Each played session with its turns; every span of the trace is paired with the outcome it recorded."""
    views = []
    for played in sessions:
        outcomes = iter(played.outcomes)
        turns = [
            Turn(customer=trace.input, calls=[_call(next(outcomes)) for _ in trace.tool_calls], agent=trace.output)
            for trace in played.trace.traces
        ]
        views.append(
            Conversation(
                session_id=played.script.session_id, title=played.script.title, customer=played.customer,
                as_scripted=not played.off_script, off_script=played.off_script, turns=turns,
            )
        )  # fmt: skip
    return views


def _why(call: Call) -> str:
    rules = ", ".join(call.rules)
    return "".join((f" (rule {rules})" if rules else "", f": {call.reason}" if call.reason else ""))


def transcript(views: Sequence[Conversation]) -> str:
    """``transcripts.md``."""
    lines = ["# agentcore demo: conversations", ""]
    for view in views:
        lines += [f"## {view.session_id}: {view.title}", "", f"Customer `{view.who}`; {view.verdict}.", ""]
        for turn in view.turns:
            lines.append(f"- **customer:** {turn.customer}")
            lines += [f"  - `{call.text}`: {call.verdict}{_why(call)}" for call in turn.calls]
            lines.append(f"- **agent:** {turn.agent}")
        lines.append("")
    return "\n".join(lines)


_STYLE = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1000px;color:#1f2328}
section{border-top:1px solid #d0d7de;padding-top:.5rem}:target{background:#fff8c5}.say{margin:.3rem 0}
.call{margin:.2rem 0 .2rem 2rem;font-size:.92rem}code{background:#f6f8fa;padding:0 .2rem}
.allowed{color:#1a7f37}.DENIED,.rejected{color:#cf222e;font-weight:bold}.needs,.approved{color:#9a6700}"""


def transcript_html(views: Sequence[Conversation]) -> str:
    """``transcripts.html``: one section per conversation, anchored by session id (the report links to them)."""
    sections = []
    for view in views:
        rows = []
        for turn in view.turns:
            rows.append(f'<p class="say"><b>customer:</b> {escape(turn.customer)}</p>')
            for call in turn.calls:
                css = call.verdict.split()[0]
                rules = "".join(f" <code>{escape(rule)}</code>" for rule in call.rules)
                why = f" — {escape(call.reason)}" if call.reason else ""
                rows.append(
                    f'<p class="call decision"><code>{escape(call.text)}</code>: '
                    f'<span class="{escape(css)}">{escape(call.verdict)}</span>{" by rule" + rules if rules else ""}'
                    f"{why}</p>"
                )
            rows.append(f'<p class="say"><b>agent:</b> {escape(turn.agent)}</p>')
        sections.append(
            f'<section id="{escape(view.session_id)}"><h2>{escape(view.session_id)}: {escape(view.title)}</h2>'
            f'<p>Customer <code class="customer">{escape(view.who)}</code>; {escape(view.verdict)}.</p>'
            + "".join(rows)
            + '<p><a href="index.html#conversations">back to the report</a></p></section>'
        )
    head = f'<meta charset="utf-8"><title>agentcore demo: conversations</title><style>{_STYLE}</style>'
    body = "<h1>agentcore demo: conversations</h1>" + "".join(sections)
    return f'<!DOCTYPE html><html lang="en"><head>{head}</head><body>{body}</body></html>\n'
