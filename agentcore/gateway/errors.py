"""Errors a gateway caller can see. Each message says what happened and what the caller can do next."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from agentcore.errors import AgentCoreError
from agentcore.gateway.canonical import encodable

# How the policy engine's notes begin when a rule (or the whole evaluation) could not be evaluated.
FAILURE_NOTES = ("failed closed:", "denied because evaluation failed:")


class GatewayError(AgentCoreError):
    """Base of every gateway error."""


class UnknownToolError(GatewayError):
    """The tool name is not registered on this gateway; nothing was executed.

    The text may reach a model or an MCP client: ``known`` must hold only names the caller may see.
    """

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name = encodable(name)
        hint = _did_you_mean(name, known)
        super().__init__(f"unknown tool {name!r}{hint}; call only the tools you were given")


class ToolArgumentError(GatewayError):
    """The arguments do not match the tool's schema (or break a size/content limit); nothing was executed."""

    def __init__(self, tool: str, problems: Sequence[str]) -> None:
        self.tool = tool
        self.problems = [encodable(problem) for problem in problems]  # a key may hold a lone surrogate
        super().__init__(f"invalid arguments for {tool!r}: " + "; ".join(self.problems) + " (fix them and call again)")


class ToolDenied(GatewayError):
    """The policy denied the call. ``reasons`` name the rules; ``agent_message`` is short text for a model.

    The message (``str``) is for developers and keeps what failed; ``agent_message`` leaves out error details
    (a failed resolver's exception, an internal error), which may carry hosts or credentials.
    """

    def __init__(
        self, tool: str, reasons: Sequence[Any], *, audit_id: str | None = None, internal: bool = False
    ) -> None:
        self.tool = tool
        self.reasons = list(reasons)
        self.audit_id = audit_id
        texts = [_reason_text(r) for r in self.reasons] or ["no rule allows it (default deny)"]
        model_texts = (
            ["the gateway could not decide it"] if internal else [_reason_text(r, model=True) for r in reasons]
        )
        self.agent_message = _denied(tool, model_texts or texts)
        super().__init__(_denied(tool, texts))


class ApprovalRequired(GatewayError):
    """The call needs a human approval; it runs once ``approvals.approve(approval_id, by=...)`` is called."""

    def __init__(self, tool: str, approval_id: str, approver_role: str | None) -> None:
        self.tool = tool
        self.approval_id = approval_id
        self.approver_role = approver_role
        who = f"a principal with role {approver_role!r}" if approver_role else "an approver"
        super().__init__(
            f"tool call {tool!r} needs approval by {who}; approval request {approval_id} is pending "
            f"(agentcore gateway approvals approve {approval_id})"
        )


class ApprovalError(GatewayError):
    """An approval action is not permitted (wrong role, requester approving itself, already decided, expired)."""

    def __init__(self, message: str, *, agent_message: str | None = None) -> None:
        self.agent_message = agent_message or message  # text for a model or an MCP client
        super().__init__(message)


class ToolExecutionError(GatewayError):
    """The tool ran and failed (raised or timed out); the failure is in the audit log."""

    def __init__(self, tool: str, detail: str) -> None:
        self.tool = tool
        super().__init__(f"tool {tool!r} failed: {detail}")


class StateUnavailable(GatewayError):
    """The state store could not give a consistent answer (a lock not obtained, a clock that went backwards);
    the call was denied before it ran."""


class ErasureIncomplete(GatewayError):
    """``forget`` erased part of a subject only (the state store failed, or lost its hold on it); what it says
    was erased is, and running ``forget`` again erases the rest."""


class OutcomeNotRecorded(GatewayError):
    """The tool RAN, but its outcome could not be recorded. ``result`` holds what it returned (redacted), or
    ``error`` why it failed. The audit keeps the call as started, outcome unknown, until the gateway records the
    outcome on a later write or at ``close()``. Do not retry: a retry repeats the side effect."""

    def __init__(self, tool: str, *, audit_id: str, result: Any = None, error: str | None = None) -> None:
        self.tool = tool
        self.audit_id = audit_id
        self.result = result
        self.error = error
        ran = f"ran and failed ({error})" if error else "ran"
        super().__init__(
            f"tool call {tool!r} {ran}, but its outcome could not be recorded yet (call {audit_id}); "
            "the result is attached. Do not retry it: the call has already taken effect."
        )


def _denied(tool: str, texts: Sequence[str]) -> str:
    return f"Tool call {tool!r} was denied by policy: " + "; ".join(texts) + ". Do not retry it."


def _reason_text(reason: Any, *, model: bool = False) -> str:
    """A policy Reason reads as its rule text plus, when present, the note saying why it applied.

    For a model, a rule that failed closed says so without the failure itself.
    """
    text = str(getattr(reason, "text", reason)).rstrip(".")
    note = getattr(reason, "note", "")
    if model and note.startswith(FAILURE_NOTES):
        note = "failed closed: it could not be evaluated"
    return f"{text} ({note})" if note else text


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
