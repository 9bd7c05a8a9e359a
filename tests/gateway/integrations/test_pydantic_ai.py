"""pydantic-ai: the gateway toolset run by an ``Agent`` with ``FunctionModel`` (scripted) and ``TestModel``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from agentcore import Gateway
from agentcore.integrations.pydantic_ai import GatewayToolset

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}


class Script:
    """A FunctionModel script: turn n asks for ``turns[n]`` tool calls, then answers "done"; it keeps what it read."""

    def __init__(self, *turns: list[tuple[str, dict[str, Any]]]) -> None:
        self.turns, self.read = list(turns), []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts
        self.read += [f"{p.outcome}: {p.content}" for p in last if isinstance(p, ToolReturnPart)]
        if self.turns:
            calls = self.turns.pop(0)
            return ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=f"c{len(self.turns)}{i}")
                                        for i, (n, a) in enumerate(calls)])  # fmt: skip
        return ModelResponse(parts=[TextPart("done")])


def agent_for(gw: Gateway, script: Script) -> tuple[Agent[None, Any], GatewayToolset]:
    toolset = GatewayToolset(gw, principal=SUPPORT)
    return Agent(FunctionModel(script), toolsets=[toolset], output_type=[str, DeferredToolRequests]), toolset


def test_allow_deny_invalid_arguments_and_async_tool(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    script = Script(
        [("crm_lookup", {"customer_id": "c1"}), ("email_send", {"recipient": "eve@evil.test"}), ("crm_lookup", {})],
        [("crm_lookup", {"customer_id": "c2"}), ("notes_add", {"text": "hello"})],  # corrected; an async tool
    )
    agent, _ = agent_for(gw, script)
    assert agent.run_sync("look up c1").output == "done"
    allowed, denied, invalid, corrected, note = script.read
    assert allowed.startswith("success: ") and json.loads(allowed[9:])["email"] == "[REDACTED:email]"
    assert denied.startswith("success: Error: Tool call 'email.send' was denied by policy")  # the model reads why
    assert invalid.startswith("retried: Error: invalid arguments for 'crm.lookup'")  # a ModelRetry
    assert json.loads(corrected[9:])["id"] == "c2" and note == "success: hello"
    assert runs == {"crm.lookup": 2, "notes.add": 1}


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_approval_defers_the_call_and_resumes_with_one_execution(make_gateway: Factory, decision: str) -> None:
    gw, runs = make_gateway()
    script = Script([("refunds_issue", {"order_id": "o1", "amount": 900})])
    agent, toolset = agent_for(gw, script)
    first = agent.run_sync("refund 900")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests) and [c.tool_name for c in requests.approvals] == ["refunds_issue"]
    assert toolset.results(requests).approvals == {} and runs == {}  # pending: nothing to resume with yet
    (approval,) = gw.approvals.list()
    if decision == "approve":
        gw.approvals.approve(approval.id, by=MANAGER)
    else:
        gw.approvals.reject(approval.id, by=MANAGER, note="too much")
    done = agent.run_sync(message_history=first.all_messages(), deferred_tool_results=toolset.results(requests))
    assert done.output == "done"
    if decision == "approve":
        assert json.loads(script.read[-1][9:]) == {"order_id": "o1", "refunded": 900} and runs == {"refunds.issue": 1}
    else:
        assert "rejected by mona (too much)" in script.read[-1] and runs == {}
    assert len(gw.approvals.list(None)) == 1


def test_test_model_calls_every_listed_tool_through_the_gateway(make_gateway: Factory) -> None:
    gw, _ = make_gateway()
    agent = Agent(TestModel(call_tools=["crm_lookup"]), toolsets=[GatewayToolset(gw, principal=SUPPORT)])
    agent.run_sync("go")
    assert [row["tool"] for row in gw.audit.rows()] == ["crm.lookup"] * 2  # the decision, then the outcome
