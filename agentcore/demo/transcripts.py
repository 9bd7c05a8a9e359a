"""The conversations as Markdown: what a reviewer reads to see what the agent said and what the gateway decided."""

from __future__ import annotations

from collections.abc import Sequence

from agentcore.demo.runner import PlayedSession

_MARK = {"allow": "allowed", "deny": "DENIED", "needs_approval": "needs approval"}


def transcript(sessions: Sequence[PlayedSession]) -> str:
    lines = ["# agentcore demo: conversations", ""]
    for played in sessions:
        script = played.script
        verdict = "as scripted" if not played.off_script else "OFF SCRIPT: " + "; ".join(played.off_script)
        lines += [f"## {script.session_id}: {script.title}", "", f"Customer `{script.customer}`; {verdict}.", ""]
        for trace in played.trace.traces:
            lines.append(f"- **customer:** {trace.input}")
            for call in trace.tool_calls:
                arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
                lines.append(f"  - `{call.name}({arguments})`: {_MARK.get(call.decision or '', call.decision)}")
            lines.append(f"- **agent:** {trace.output}")
        lines.append("")
    return "\n".join(lines)
