"""smolagents: the gateway tools run by a real ``ToolCallingAgent`` with a scripted ``Model`` (no network)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("smolagents")

from smolagents import ToolCallingAgent
from smolagents.models import Model
from smolagents.utils import AgentError

from agentcore import Gateway
from agentcore.integrations.smolagents import pause_for_approval, smolagents_tools

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}
REFUND = ("refunds_issue", {"order_id": "o1", "amount": 900})


def observations(agent: ToolCallingAgent) -> list[str]:
    """What the model read after each action step: the tool's observation, or the error smolagents raised."""
    steps = [s for s in agent.memory.steps if hasattr(s, "observations") and (s.observations or s.error)]
    return [step.observations or str(step.error) for step in steps]


def agent_for(gw: Gateway, model: Model) -> ToolCallingAgent:
    tools = smolagents_tools(gw, principal=SUPPORT)
    return ToolCallingAgent(tools=tools, model=model, step_callbacks=[pause_for_approval], verbosity_level=0)


def test_allow_deny_invalid_arguments_and_async_tool(make_gateway: Factory, scripted_smolagents_model: Any) -> None:
    gw, runs = make_gateway()
    model = scripted_smolagents_model(
        [("crm_lookup", {"customer_id": "c1"})],
        [("email_send", {"recipient": "eve@evil.test"})],
        [("refunds_issue", {"order_id": "o1", "amount": 50, "note": "x"})],  # not in the gateway's schema
        [("notes_add", {"text": "hello"})],  # an async tool
    )
    agent = agent_for(gw, model)
    assert agent.run("look up c1") == "done"
    allowed, denied, invalid, note, final = observations(agent)
    assert json.loads(allowed)["email"] == "[REDACTED:email]"
    assert denied.startswith("Error: Tool call 'email.send' was denied by policy")
    assert "is not in the tool's input schema" in invalid  # smolagents' own check: it never reached the tool
    assert note == "hello" and final == "done"
    assert runs == {"crm.lookup": 1, "notes.add": 1}
    assert [(r["tool"], r["effect"]) for r in gw.audit.rows() if r["effect"]][1] == ("email.send", "deny")


def test_the_gateway_rejects_arguments_smolagents_lets_through(
    make_gateway: Factory, scripted_smolagents_model: Any
) -> None:
    gw, runs = make_gateway()
    agent = agent_for(
        gw, scripted_smolagents_model([("notes_add", {"text": "x" * 70_000})])
    )  # over the gateway's string limit
    agent.run("note")
    invalid, final = observations(agent)
    assert invalid.startswith("Error: invalid arguments for 'notes.add'") and final == "done" and runs == {}
    assert [(r["tool"], r["effect"]) for r in gw.audit.rows()] == [("notes.add", "deny")]


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_approval_interrupts_the_run_and_resumes_with_one_execution(
    make_gateway: Factory, scripted_smolagents_model: Any, decision: str
) -> None:
    gw, runs = make_gateway()
    model = scripted_smolagents_model([REFUND], [REFUND])  # the model makes the call again after the resume
    agent = agent_for(gw, model)
    with pytest.raises(AgentError, match="interrupted"):
        agent.run("refund order o1: 900")
    assert "Pending human approval" in observations(agent)[-1] and runs == {}
    (approval,) = gw.approvals.list()
    if decision == "approve":
        gw.approvals.approve(approval.id, by=MANAGER)
    else:
        gw.approvals.reject(approval.id, by=MANAGER, note="too much")
    assert agent.run("refund order o1: 900", reset=False) == "done"
    last, final = observations(agent)[-2:]
    assert final == "done"
    if decision == "approve":
        assert json.loads(last) == {"order_id": "o1", "refunded": 900} and runs == {"refunds.issue": 1}
        assert gw.approvals.get(approval.id).status == "executed"
    else:
        assert "rejected by mona (too much)" in last and runs == {}
    assert len(gw.approvals.list(None)) == 1
