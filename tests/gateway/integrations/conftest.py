"""Scripted models for the framework integration tests."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest


@pytest.fixture
def scripted_agents_model() -> type[Any]:
    """An OpenAI Agents SDK ``Model``: it asks for its calls in the first turn, then answers "done"."""
    pytest.importorskip("agents")
    from agents import Model, ModelResponse, Usage, set_tracing_disabled

    set_tracing_disabled(True)  # the SDK would export traces to OpenAI
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedModel(Model):
        """Asks for ``calls`` in its first turn; afterwards answers with the tool outputs it was given."""

        def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
            self.calls, self.outputs = calls, []

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
            items = [] if isinstance(input, str) else list(input)
            outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if not outputs:
                output: list[Any] = [
                    ResponseFunctionToolCall(type="function_call", call_id=f"call_{i}", name=n, arguments=json.dumps(a))
                    for i, (n, a) in enumerate(self.calls)
                ]
            else:
                self.outputs = [o["output"] for o in outputs]
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                output = [ResponseOutputMessage(id="m1", type="message", role="assistant", status="completed",
                                                content=[text])]  # fmt: skip
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise NotImplementedError

    return ScriptedModel


Turn = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def scripted_smolagents_model() -> Callable[..., Any]:
    """``make(*turns)``: a smolagents ``Model`` whose turn n asks for ``turns[n]``'s calls, then answers "done"."""
    pytest.importorskip("smolagents")
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model

    class ScriptedModel(Model):
        def __init__(self, *turns: Turn) -> None:
            super().__init__(model_id="scripted")
            self.turns = list(turns)

        def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
            calls = self.turns.pop(0) if self.turns else [("final_answer", {"answer": "done"})]
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                content="",
                tool_calls=[ChatMessageToolCall(ChatMessageToolCallFunction(arguments=a, name=n), f"c{i}", "function")
                            for i, (n, a) in enumerate(calls)],
            )  # fmt: skip

    return ScriptedModel


@pytest.fixture
def scripted_llamaindex_llm() -> Callable[..., Any]:
    """``make(*turns)``: LlamaIndex's ``MockFunctionCallingLLM`` asking for each turn's calls, then "done"."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    def make(*turns: Turn) -> MockFunctionCallingLLM:
        left, ids = list(turns), itertools.count(10)  # ids sort in the order the calls were asked for

        def respond(messages: Any, **kwargs: Any) -> ChatMessage:
            if not left:
                return ChatMessage(role=MessageRole.ASSISTANT, content="done")
            calls = [ToolCallBlock(tool_call_id=f"c{next(ids)}", tool_name=n, tool_kwargs=a) for n, a in left.pop(0)]
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=calls)

        return MockFunctionCallingLLM(response_generator=respond)

    return make


@pytest.fixture
def scripted_adk_llm() -> Callable[..., Any]:
    """``make(*turns)``: a Google ADK ``BaseLlm`` asking for each turn's calls, then "done"; ``.read`` keeps the
    function responses it was given."""
    pytest.importorskip("google.adk")
    from google.adk.models import BaseLlm, LlmRequest, LlmResponse
    from google.genai import types
    from pydantic import Field

    class ScriptedLlm(BaseLlm):
        turns: list[Turn]
        read: list[dict[str, Any]] = Field(default_factory=list)

        async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncIterator[Any]:
            last = llm_request.contents[-1]
            self.read += [p.function_response.response for p in last.parts or [] if p.function_response]
            if self.turns:
                parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in self.turns.pop(0)]
            else:
                parts = [types.Part(text="done")]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    return lambda *turns: ScriptedLlm(model="scripted", turns=list(turns))
