"""Scripted models for the framework integration tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
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
