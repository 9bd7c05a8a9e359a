"""Anthropic: ``tool_use`` blocks in (a ``Message``, its content, or their dict forms), ``tool_result`` blocks out."""

from __future__ import annotations

from typing import Any

from agentcore.gateway.adapters.calls import (
    Caller,
    Message,
    Outcome,
    ToolCall,
    arun_calls,
    items,
    run_calls,
    tool_specs,
)
from agentcore.gateway.adapters.usage import TokenKeys, charge
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike

# input_tokens leaves out the cached prompt tokens: they are counted beside it
TOKENS = TokenKeys(("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"), "output_tokens")


def anthropic_tools(gw: Gateway, principal: PrincipalLike, agent: AgentLike = None) -> list[Message]:
    """``tools=`` of ``messages.create`` for the tools this principal may use."""
    return [
        {"name": s.name, "description": s.description, "input_schema": s.schema}
        for s in tool_specs(gw, principal, agent)
    ]


def run_anthropic_tool_uses(
    gw: Gateway, content: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> Message:  # fmt: skip
    """``tool_use`` blocks (or the message holding them) -> one user message of ``tool_result`` blocks."""
    calls, caller = _tool_uses(content), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, content, TOKENS, caller)
    return _results(calls, run_calls(gw, calls, caller))


async def arun_anthropic_tool_uses(
    gw: Gateway, content: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> Message:  # fmt: skip
    """Async :func:`run_anthropic_tool_uses`."""
    calls, caller = _tool_uses(content), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, content, TOKENS, caller)
    return _results(calls, await arun_calls(gw, calls, caller))


def _tool_uses(value: Any) -> list[ToolCall]:
    return [
        ToolCall(block.get("id"), str(block.get("name", "")), block.get("input", {}))
        for block in items(value, "content")
        if block.get("type") == "tool_use"
    ]


def _results(calls: list[ToolCall], outcomes: list[Outcome]) -> Message:
    results = []
    for call, outcome in zip(calls, outcomes, strict=True):
        result: Message = {"type": "tool_result", "tool_use_id": call.id, "content": outcome.text}
        if outcome.is_error:
            result["is_error"] = True
        results.append(result)
    return {"role": "user", "content": results}
