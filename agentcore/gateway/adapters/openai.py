"""OpenAI: Chat Completions ``tool_calls`` and Responses API ``function_call`` items in, tool results out.

Each function takes the SDK's objects (``ChatCompletion``, ``ChatCompletionMessage``, ``Response``, their
``tool_calls`` / ``output`` lists) or their dict forms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from agentcore.gateway.adapters.calls import (
    Caller,
    Message,
    Outcome,
    ToolCall,
    arun_calls,
    items,
    parse_arguments,
    plain,
    run_calls,
    tool_specs,
)
from agentcore.gateway.adapters.usage import TokenKeys, charge
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike

Api = Literal["chat", "responses"]
CHAT_TOKENS = TokenKeys(("prompt_tokens",), "completion_tokens")  # prompt_tokens include the cached ones
RESPONSES_TOKENS = TokenKeys(("input_tokens",), "output_tokens")


def openai_tools(gw: Gateway, principal: PrincipalLike, agent: AgentLike = None, *, api: Api = "chat") -> list[Message]:
    """``tools=`` for the tools this principal may use: of ``chat.completions.create`` or of ``responses.create``."""
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    specs = tool_specs(gw, principal, agent)
    if api == "chat":
        return [
            {"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.schema}}
            for s in specs
        ]
    return [
        {"type": "function", "name": s.name, "description": s.description, "parameters": s.schema, "strict": False}
        for s in specs
    ]


def run_openai_tool_calls(
    gw: Gateway, tool_calls: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> list[Message]:  # fmt: skip
    """``tool_calls`` (or the message or completion holding them) -> ``{"role": "tool", ...}`` messages, in order."""
    calls, caller = _chat_calls(tool_calls), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, tool_calls, CHAT_TOKENS, caller)
    return _tool_messages(calls, run_calls(gw, calls, caller))


async def arun_openai_tool_calls(
    gw: Gateway, tool_calls: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> list[Message]:  # fmt: skip
    """Async :func:`run_openai_tool_calls`."""
    calls, caller = _chat_calls(tool_calls), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, tool_calls, CHAT_TOKENS, caller)
    return _tool_messages(calls, await arun_calls(gw, calls, caller))


def run_openai_response_calls(
    gw: Gateway, output: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> list[Message]:  # fmt: skip
    """A ``Response`` (or its ``output`` items) -> ``function_call_output`` items keyed by ``call_id``, in order."""
    calls, caller = _response_calls(output), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, output, RESPONSES_TOKENS, caller)
    return _call_outputs(calls, run_calls(gw, calls, caller))


async def arun_openai_response_calls(
    gw: Gateway, output: Any, *, principal: PrincipalLike, agent: AgentLike = None,
    session: str | None = None, tenant: str | None = None, record_usage: bool = True,
) -> list[Message]:  # fmt: skip
    """Async :func:`run_openai_response_calls`."""
    calls, caller = _response_calls(output), Caller(principal, agent, session, tenant)
    if record_usage:
        charge(gw, output, RESPONSES_TOKENS, caller)
    return _call_outputs(calls, await arun_calls(gw, calls, caller))


def _chat_calls(value: Any) -> list[ToolCall]:
    data = plain(value)
    if isinstance(data, Mapping) and "choices" in data:  # a ChatCompletion: its first choice's message
        data = (data["choices"] or [{}])[0].get("message") or {}
    functions = [(call.get("id"), call.get("function") or {}) for call in items(data, "tool_calls")]
    return [ToolCall(call_id, str(f.get("name", "")), parse_arguments(f.get("arguments"))) for call_id, f in functions]


def _response_calls(value: Any) -> list[ToolCall]:
    return [
        ToolCall(item.get("call_id"), str(item.get("name", "")), parse_arguments(item.get("arguments")))
        for item in items(value, "output")
        if item.get("type") == "function_call"
    ]


def _tool_messages(calls: list[ToolCall], outcomes: list[Outcome]) -> list[Message]:
    return [{"role": "tool", "tool_call_id": c.id, "content": o.text} for c, o in zip(calls, outcomes, strict=True)]


def _call_outputs(calls: list[ToolCall], outcomes: list[Outcome]) -> list[Message]:
    return [
        {"type": "function_call_output", "call_id": c.id, "output": o.text}
        for c, o in zip(calls, outcomes, strict=True)
    ]
