"""Model SDK adapters: a model's tool calls in, in the SDK's own objects or their dicts; tool results out.

Every call goes through the gateway; denials, pending approvals and argument errors come back as tool results the
model can read and act on, never as exceptions. Each ``run_*`` has an async twin ``arun_*``. Given a whole
response, they charge its token usage to the gateway's ledger, once (``record_usage=False`` opts out; see
:mod:`agentcore.gateway.adapters.usage`).
"""

from __future__ import annotations

from agentcore.gateway.adapters.anthropic import anthropic_tools, arun_anthropic_tool_uses, run_anthropic_tool_uses
from agentcore.gateway.adapters.bedrock import arun_bedrock_tool_uses, bedrock_tools, run_bedrock_tool_uses
from agentcore.gateway.adapters.openai import (
    arun_openai_response_calls,
    arun_openai_tool_calls,
    openai_tools,
    run_openai_response_calls,
    run_openai_tool_calls,
)

__all__ = [
    "anthropic_tools",
    "arun_anthropic_tool_uses",
    "arun_bedrock_tool_uses",
    "arun_openai_response_calls",
    "arun_openai_tool_calls",
    "bedrock_tools",
    "openai_tools",
    "run_anthropic_tool_uses",
    "run_bedrock_tool_uses",
    "run_openai_response_calls",
    "run_openai_tool_calls",
]
