"""LlamaIndex: the gateway tools run by a real ``FunctionAgent`` workflow with ``MockFunctionCallingLLM``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.llms.mock import MockFunctionCallingLLM

from agentcore import Gateway
from agentcore.integrations.llamaindex import ApprovalDecided, ApprovalRequested, llamaindex_tools

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}
REFUND = ("refunds_issue", {"order_id": "o1", "amount": 900})


async def run(agent: FunctionAgent, task: str, decide: Callable[[ApprovalRequested], None] | None = None) -> Any:
    """Run the agent; answer each approval request with ``decide`` and resume.

    -> (final text, tool outputs in the order the model asked for them: parallel calls finish in any order)."""
    handler = agent.run(task)
    results = {}
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            results[event.tool_id] = event.tool_output
        if isinstance(event, ApprovalRequested) and decide is not None:
            decide(event)
            handler.ctx.send_event(ApprovalDecided(approval_id=event.approval_id))
    return str(await handler), [results[k] for k in sorted(results)]


def agent_for(gw: Gateway, llm: MockFunctionCallingLLM) -> FunctionAgent:
    return FunctionAgent(tools=llamaindex_tools(gw, principal=SUPPORT), llm=llm)


def test_allow_deny_invalid_arguments_and_async_tool(make_gateway: Factory, scripted_llamaindex_llm: Any) -> None:
    gw, runs = make_gateway()
    llm = scripted_llamaindex_llm(
        [("crm_lookup", {"customer_id": "c1"}), ("email_send", {"recipient": "eve@evil.test"}), ("crm_lookup", {})],
        [("notes_add", {"text": "hello"})],  # an async tool
    )
    final, (allowed, denied, invalid, note) = asyncio.run(run(agent_for(gw, llm), "look up c1"))
    assert final == "done"
    assert not allowed.is_error and json.loads(allowed.content)["email"] == "[REDACTED:email]"
    assert denied.is_error and denied.content.startswith("Error: Tool call 'email.send' was denied by policy")
    assert invalid.is_error and invalid.content.startswith("Error: invalid arguments for 'crm.lookup'")
    assert not note.is_error and note.content == "hello"
    assert runs == {"crm.lookup": 1, "notes.add": 1}


def test_tools_show_the_model_the_gateway_schema(make_gateway: Factory) -> None:
    gw, _ = make_gateway()
    tools = {t.metadata.name: t for t in llamaindex_tools(gw, principal=SUPPORT)}
    assert "vault_read" not in tools  # admin-only: not offered to a support user
    parameters = tools["email_send"].metadata.to_openai_tool()["function"]["parameters"]
    assert parameters["required"] == ["recipient"] and set(parameters["properties"]) == {"recipient", "body"}


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_approval_pauses_the_workflow_and_resumes_with_one_execution(
    make_gateway: Factory, scripted_llamaindex_llm: Any, decision: str
) -> None:
    gw, runs = make_gateway()
    seen: list[ApprovalRequested] = []

    def decide(event: ApprovalRequested) -> None:
        seen.append(event)
        assert runs == {}  # paused: nothing ran yet
        if decision == "approve":
            gw.approvals.approve(event.approval_id, by=MANAGER)
        else:
            gw.approvals.reject(event.approval_id, by=MANAGER, note="too much")

    final, (result,) = asyncio.run(run(agent_for(gw, scripted_llamaindex_llm([REFUND])), "refund 900", decide))
    assert final == "done"
    (event,) = seen
    assert event.tool == "refunds.issue" and event.args == REFUND[1] and event.approver_roles == ["manager"]
    if decision == "approve":
        assert json.loads(result.content) == {"order_id": "o1", "refunded": 900} and runs == {"refunds.issue": 1}
        assert gw.approvals.get(event.approval_id).status == "executed"
    else:
        assert result.is_error and "rejected by mona (too much)" in result.content and runs == {}
    assert len(gw.approvals.list(None)) == 1
