"""The LLM-agent example (examples/retail/llm_agent.py) speaks the real Chat Completions shapes, here against a
scripted model: function tools, the assistant's tool-call message, and a ``tool`` reply for each ``tool_call_id``."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore.demo import AgentSession
from agentcore.gateway import Gateway

chat = pytest.importorskip("openai.types.chat")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "retail" / "llm_agent.py"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("llm_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ScriptedModel:
    """First turn: two tool calls (one the policy denies to a guest, one with broken arguments); then it answers."""

    def __init__(self) -> None:
        self.tools: list[dict[str, Any]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        self.tools = tools
        if messages[-1]["role"] == "user":
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    _call("call_1", "get_user_details", json.dumps({"user_id": "mallory_1"})),
                    _call("call_2", "get_order_details", "{not json"),
                ],
            }
        return {"role": "assistant", "content": "Please tell me the email address on your account first."}


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_the_llm_agent_example_uses_real_tool_message_shapes(
    gateway: Gateway, check_typed: Callable[[Any, Any], None]
) -> None:
    model = ScriptedModel()
    agent = _example().ChatAgent(model)
    session = AgentSession("s-llm", gateway, tenant="retail-demo")
    reply = agent.respond("Hi, what is in my account?", session)

    assert reply == "Please tell me the email address on your account first."
    assert model.tools and {t["function"]["name"] for t in model.tools} >= {"get_user_details", "cancel_pending_order"}
    for tool in model.tools:
        check_typed(tool, chat.ChatCompletionFunctionToolParam)
    user, assistant, denied, invalid, answer = agent.histories["s-llm"]
    check_typed(user, chat.ChatCompletionUserMessageParam)
    for message in (assistant, answer):
        check_typed({k: v for k, v in message.items() if v is not None}, chat.ChatCompletionAssistantMessageParam)
    for message in (denied, invalid):
        check_typed(message, chat.ChatCompletionToolMessageParam)
    assert [denied["tool_call_id"], invalid["tool_call_id"]] == ["call_1", "call_2"]
    assert json.loads(denied["content"])["status"] == "denied"  # a guest sees no account: the gateway said no
    assert json.loads(invalid["content"])["status"] == "invalid"  # never reached the gateway
    assert [(o.tool, o.status) for o in session.outcomes] == [("get_user_details", "denied")]
    assert [row["tool"] for row in gateway.audit.rows()] == ["get_user_details"]
