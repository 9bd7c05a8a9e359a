"""OpenAI Agents SDK: function tools over the gateway, run by ``Runner`` with a scripted ``Model``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner

from agentcore import Gateway
from agentcore.integrations.openai_agents import agents_tools, resume_state

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}


def run(agent: Agent[Any], prompt: Any) -> Any:
    return asyncio.run(Runner.run(agent, prompt))


def test_allow_deny_invalid_arguments_and_async_tool(make_gateway: Factory, scripted_agents_model: Any) -> None:
    gw, runs = make_gateway()
    model = scripted_agents_model(
        ("crm_lookup", {"customer_id": "c1"}),
        ("email_send", {"recipient": "eve@evil.test"}),
        ("crm_lookup", {}),
        ("notes_add", {"text": "hello"}),  # an async tool, awaited in the SDK's event loop
    )
    agent = Agent(name="support", model=model, tools=agents_tools(gw, principal=SUPPORT))
    result = run(agent, "look up c1")
    assert result.final_output == "done"
    allowed, denied, invalid, note = model.outputs
    assert json.loads(allowed)["email"] == "[REDACTED:email]"
    assert denied.startswith("Error: Tool call 'email.send' was denied by policy")
    assert "invalid arguments" in invalid and note == "hello"
    assert runs == {"crm.lookup": 1, "notes.add": 1}


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_approval_interrupts_the_run_and_resumes_with_one_execution(
    make_gateway: Factory, scripted_agents_model: Any, decision: str
) -> None:
    gw, runs = make_gateway()
    model = scripted_agents_model(("refunds_issue", {"order_id": "o1", "amount": 900}))
    agent = Agent(name="support", model=model, tools=agents_tools(gw, principal=SUPPORT))
    paused = run(agent, "refund 900")
    assert [i.tool_name for i in paused.interruptions] == ["refunds_issue"] and runs == {}
    (approval,) = gw.approvals.list()
    assert run(agent, resume_state(paused)).interruptions  # still pending: the run stops on it again
    if decision == "approve":
        gw.approvals.approve(approval.id, by=MANAGER)
    else:
        gw.approvals.reject(approval.id, by=MANAGER, note="too much")
    result = run(agent, resume_state(paused))
    assert result.final_output == "done" and not result.interruptions
    if decision == "approve":
        assert json.loads(model.outputs[0]) == {"order_id": "o1", "refunded": 900}
        assert runs == {"refunds.issue": 1}
    else:
        assert "rejected by mona (too much)" in model.outputs[0] and runs == {}
    assert len(gw.approvals.list(None)) == 1  # no second approval was requested


def test_arguments_the_sdk_cannot_parse_are_refused_by_the_gateway(
    make_gateway: Factory, scripted_agents_model: Any
) -> None:
    gw, runs = make_gateway()
    model = scripted_agents_model(("crm_lookup", "not an object"), ("notes_add", {"text": "hello"}))
    agent = Agent(name="support", model=model, tools=agents_tools(gw, principal=SUPPORT))
    paused = run(agent, "look up")  # the SDK interrupts by itself: its approval check cannot read the arguments
    assert [i.tool_name for i in paused.interruptions] == ["crm_lookup"] and gw.approvals.list() == []
    result = run(agent, resume_state(paused))
    assert result.final_output == "done" and not result.interruptions
    note, refused = sorted(model.outputs, key=lambda output: output.startswith("Error"))  # the note ran first
    assert refused.startswith("Error: invalid arguments for 'crm.lookup'") and note == "hello"
    assert runs == {"notes.add": 1}
    assert [r["effect"] for r in gw.audit.rows() if r["tool"] == "crm.lookup"] == ["deny"]
