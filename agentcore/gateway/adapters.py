"""OpenAI chat-completions ``tool_calls`` and Anthropic ``tool_use`` blocks in, tool results out (plain dicts).

Every call goes through the gateway; denials, pending approvals and argument errors come back as tool results
the model can read and act on, never as exceptions, so one bad call does not break the agent loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.gateway.errors import ApprovalRequired, GatewayError
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.gateway.naming import name_map

Message = dict[str, Any]


def _names(gw: Gateway) -> dict[str, str]:
    return {exposed: tool for exposed, (_, tool) in name_map((None, t.name) for t in gw.registry).items()}


def openai_tools(gw: Gateway, principal: PrincipalLike, agent: AgentLike = None) -> list[Message]:
    """Function definitions (``tools=`` of chat.completions) for the tools this principal may use."""
    exposed = {tool: name for name, tool in _names(gw).items()}
    return [
        {
            "type": "function",
            "function": {"name": exposed[t.name], "description": t.description, "parameters": t.input_schema},
        }
        for t in gw.list_tools(principal, agent)
    ]


def anthropic_tools(gw: Gateway, principal: PrincipalLike, agent: AgentLike = None) -> list[Message]:
    """Tool definitions (``tools=`` of messages.create) for the tools this principal may use."""
    return [
        {"name": f["function"]["name"], "description": f["function"]["description"],
         "input_schema": f["function"]["parameters"]}
        for f in openai_tools(gw, principal, agent)
    ]  # fmt: skip


def _outcome(gw: Gateway, exposed: str, args: Any, who: dict[str, Any]) -> tuple[str, bool]:
    """Run one call; return (text for the model, is_error)."""
    tool = _names(gw).get(exposed, exposed)
    try:
        result = gw.call(tool, args, **who)
    except ApprovalRequired as pending:
        return f"Pending human approval ({pending.approval_id}); tell the user it awaits approval.", True
    except GatewayError as error:
        return f"Error: {getattr(error, 'agent_message', str(error))}", True
    return (result if isinstance(result, str) else json.dumps(result, default=str)), False


def _parse_arguments(raw: Any) -> Any:
    """OpenAI sends arguments as a JSON string; malformed JSON is passed on so the gateway rejects and audits it."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return raw


def run_openai_tool_calls(
    gw: Gateway,
    tool_calls: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> list[Message]:
    """``tool_calls`` (or the assistant message holding them) -> ``{"role": "tool", ...}`` messages, in order."""
    calls = (tool_calls.get("tool_calls") or []) if isinstance(tool_calls, Mapping) else tool_calls
    who = {"principal": principal, "agent": agent, "session": session, "tenant": tenant}
    messages = []
    for call in calls:
        function = call.get("function") or {}
        text, _ = _outcome(gw, str(function.get("name", "")), _parse_arguments(function.get("arguments")), who)
        messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": text})
    return messages


def run_anthropic_tool_uses(
    gw: Gateway,
    content: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> Message:
    """``tool_use`` blocks (or the assistant message) -> one user message of ``tool_result`` blocks."""
    blocks = (content.get("content") or []) if isinstance(content, Mapping) else content
    who = {"principal": principal, "agent": agent, "session": session, "tenant": tenant}
    results = []
    for block in blocks:
        if block.get("type") != "tool_use":
            continue
        text, is_error = _outcome(gw, str(block.get("name", "")), block.get("input", {}), who)
        result: Message = {"type": "tool_result", "tool_use_id": block.get("id"), "content": text}
        if is_error:
            result["is_error"] = True
        results.append(result)
    return {"role": "user", "content": results}
