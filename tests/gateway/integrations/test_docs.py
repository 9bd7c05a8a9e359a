"""The snippets of docs/integrations.md run as written, each framework with its own fake or scripted model."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcore import Gateway

pytest.importorskip("langgraph")
pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
DOC = Path(__file__).resolve().parents[3] / "docs" / "integrations.md"
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}
REFUND = ("refunds_issue", {"order_id": "o1", "amount": 900})


def snippets() -> dict[str, list[str]]:
    """The python blocks of each ``##`` section, by heading."""
    sections: dict[str, list[str]] = {}
    for section in re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.M)[1:]:
        heading = section.splitlines()[0].strip()
        sections[heading] = re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S)
    return sections


def openai_client() -> Any:
    """The real OpenAI SDK against a local transport that answers one Responses call with a function call."""
    import openai

    def respond(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        assert {t["name"] for t in sent["tools"]} >= {"crm_lookup"}
        call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "crm_lookup",
                "arguments": json.dumps({"customer_id": "c1"})}  # fmt: skip
        return httpx.Response(200, json={
            "id": "resp_1", "object": "response", "created_at": 1, "model": sent["model"], "output": [call],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": sent["tools"],
        })  # fmt: skip

    http = httpx.Client(transport=httpx.MockTransport(respond))
    return openai.OpenAI(api_key="test", base_url="http://model.test/v1", http_client=http)


def langchain_model() -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class ToolCallingFake(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    ask = AIMessage("", tool_calls=[{"name": REFUND[0], "args": REFUND[1], "id": "call_1"}])
    return ToolCallingFake(messages=iter([ask, AIMessage("done")]))


def pydantic_ai_model() -> Any:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def script(messages: Any, info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(REFUND[0], REFUND[1], tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(script)


def test_every_framework_section_has_a_snippet() -> None:
    found = snippets()
    for heading in ("Model SDKs: OpenAI, Anthropic, Bedrock Converse", "LangChain / LangGraph", "OpenAI Agents SDK",
                    "pydantic-ai", "LlamaIndex", "smolagents", "Google ADK", "Strands Agents"):  # fmt: skip
        assert found[heading], heading


SCRIPTED = {  # heading -> (fixture making the framework's scripted model, the turns it plays)
    "OpenAI Agents SDK": ("scripted_agents_model", [REFUND]),
    "LlamaIndex": ("scripted_llamaindex_llm", [[REFUND]]),
    "smolagents": ("scripted_smolagents_model", [[REFUND], [REFUND]]),  # after the resume it asks again
    "Google ADK": ("scripted_adk_llm", [[REFUND]]),
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    "heading",
    ["LangChain / LangGraph", "OpenAI Agents SDK", "pydantic-ai", "LlamaIndex", "smolagents", "Google ADK"],
)
def test_framework_snippet_pauses_for_approval_and_runs_the_refund_once(
    make_gateway: Factory, request: pytest.FixtureRequest, heading: str
) -> None:
    gw, runs = make_gateway()
    if heading in SCRIPTED:
        fixture, turns = SCRIPTED[heading]
        model = request.getfixturevalue(fixture)(*turns)
    else:
        model = langchain_model() if heading.startswith("LangChain") else pydantic_ai_model()
    namespace: dict[str, Any] = {"gw": gw, "user": SUPPORT, "manager": MANAGER, "model": model}
    for code in snippets()[heading]:
        exec(compile(code, f"{DOC}:{heading}", "exec"), namespace)
    assert runs == {"refunds.issue": 1}
    assert [a.status for a in gw.approvals.list(None)] == ["executed"]


def test_model_sdk_snippet_runs_against_the_real_openai_client(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    namespace: dict[str, Any] = {"gw": gw, "user": SUPPORT, "client": openai_client()}
    for code in snippets()["Model SDKs: OpenAI, Anthropic, Bedrock Converse"]:
        exec(compile(code, str(DOC), "exec"), namespace)
    (output,) = namespace["outputs"]
    assert output["call_id"] == "call_1" and json.loads(output["output"])["tier"] == "gold"
    assert runs == {"crm.lookup": 1}
