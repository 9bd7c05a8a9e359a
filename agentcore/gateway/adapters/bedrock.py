"""Amazon Bedrock Converse: ``toolUse`` blocks in (the ``converse`` response, its message or content), ``toolResult``
blocks out, in the shapes boto3's ``bedrock-runtime`` client takes and returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcore.gateway.adapters.calls import (
    Caller,
    Message,
    Outcome,
    ToolCall,
    arun_calls,
    items,
    plain,
    run_calls,
    tool_specs,
)
from agentcore.gateway.adapters.usage import TokenKeys, charge
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike

# inputTokens leaves out the cached prompt tokens: they are counted beside it
TOKENS = TokenKeys(("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"), "outputTokens")


def bedrock_tools(gw: Gateway, principal: PrincipalLike, agent: AgentLike = None) -> list[Message]:
    """``toolConfig={"tools": ...}`` of ``converse``: one ``toolSpec`` per tool this principal may use."""
    specs = []
    for s in tool_specs(gw, principal, agent):
        spec: Message = {"name": s.name, "inputSchema": {"json": s.schema}}
        if s.description:  # Converse rejects an empty description
            spec["description"] = s.description
        specs.append({"toolSpec": spec})
    return specs


def run_bedrock_tool_uses(
    gw: Gateway, response: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> Message:  # fmt: skip
    """``toolUse`` blocks -> one user message of ``toolResult`` blocks, to append to ``messages``."""
    calls, caller = _tool_uses(response), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, response, TOKENS, caller)
    return _results(calls, run_calls(gw, calls, caller))


async def arun_bedrock_tool_uses(
    gw: Gateway, response: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> Message:  # fmt: skip
    """Async :func:`run_bedrock_tool_uses`."""
    calls, caller = _tool_uses(response), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, response, TOKENS, caller)
    return _results(calls, await arun_calls(gw, calls, caller))


def _tool_uses(value: Any) -> list[ToolCall]:
    data = plain(value)
    if isinstance(data, Mapping) and "output" in data:  # the converse response
        data = data["output"].get("message") or {}
    uses = [block["toolUse"] for block in items(data, "content") if "toolUse" in block]
    return [ToolCall(use.get("toolUseId"), str(use.get("name", "")), use.get("input", {})) for use in uses]


def _results(calls: list[ToolCall], outcomes: list[Outcome]) -> Message:
    return {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": call.id,
                    "content": [{"text": outcome.text}],
                    "status": "error" if outcome.is_error else "success",
                }
            }
            for call, outcome in zip(calls, outcomes, strict=True)
        ],
    }
