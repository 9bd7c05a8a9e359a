"""Strands Agents: the gateway tools run by a real Strands ``Agent`` with a scripted ``Model`` (no network).

strands-agents needs mcp<2.2 and cannot live in .venv: these tests run in .venv-strands (``make strands-env``),
started from the main run by tests/gateway/integrations/test_strands_env.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("strands", reason="strands-agents lives in .venv-strands; test_strands_env.py runs these there")

from strands import Agent

from agentcore import Gateway
from agentcore.integrations.strands import INTERRUPT, resume_prompt, strands_tools

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}
REFUND = ("refunds_issue", {"order_id": "o1", "amount": 900})


def agent_for(gw: Gateway, model: Any) -> Agent:
    return Agent(model=model, tools=strands_tools(gw, principal=SUPPORT), callback_handler=None)


def test_the_model_sees_only_the_tools_the_principal_may_use(make_gateway: Factory) -> None:
    gw, _ = make_gateway()
    specs = {t.tool_name: t.tool_spec for t in strands_tools(gw, principal=SUPPORT)}
    assert "files_delete" not in specs and "vault_read" not in specs
    assert specs["crm_lookup"]["inputSchema"]["json"]["required"] == ["customer_id"]


def test_allow_deny_invalid_arguments_and_async_tool(make_gateway: Factory, scripted_strands_model: Any) -> None:
    gw, runs = make_gateway()
    model = scripted_strands_model(
        [("crm_lookup", {"customer_id": "c1"})],
        [("email_send", {"recipient": "eve@evil.test"})],
        [("refunds_issue", {"order_id": "o1", "amount": "lots"})],
        [("notes_add", {"text": "hello"})],  # an async tool
    )
    result = agent_for(gw, model)("look up c1")
    assert str(result).strip() == "done" and result.stop_reason == "end_turn"
    (allowed, denied, invalid, note) = model.read
    assert allowed[0] == "success" and json.loads(allowed[1])["email"] == "[REDACTED:email]"
    assert denied[0] == "error" and denied[1].startswith("Error: Tool call 'email.send' was denied by policy")
    assert invalid[0] == "error" and invalid[1].startswith("Error: invalid arguments for 'refunds.issue'")
    assert note == ("success", "hello")
    assert runs == {"crm.lookup": 1, "notes.add": 1}
    assert [(r["tool"], r["effect"]) for r in gw.audit.rows() if r["effect"]][1:3] == [
        ("email.send", "deny"),
        ("refunds.issue", "deny"),
    ]


def test_an_async_agent_inside_a_running_event_loop(make_gateway: Factory, scripted_strands_model: Any) -> None:
    gw, runs = make_gateway()
    model = scripted_strands_model([("notes_add", {"text": "a"}), ("crm_lookup", {"customer_id": "c1"})])

    async def main() -> Any:
        return await agent_for(gw, model).invoke_async("note and look up")

    assert str(asyncio.run(main())).strip() == "done"
    assert sorted(status for status, _ in model.read) == ["success", "success"]
    assert runs == {"notes.add": 1, "crm.lookup": 1}


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_approval_interrupts_the_run_and_resumes_with_one_execution(
    make_gateway: Factory, scripted_strands_model: Any, decision: str
) -> None:
    gw, runs = make_gateway()
    model = scripted_strands_model([REFUND])
    agent = agent_for(gw, model)
    paused = agent("refund order o1: 900")
    assert paused.stop_reason == "interrupt" and runs == {}
    (interrupt,) = paused.interrupts
    (approval,) = gw.approvals.list()
    assert interrupt.name == INTERRUPT and interrupt.reason["approval_id"] == approval.id
    assert interrupt.reason["approver_roles"] == ["manager"] and interrupt.reason["args"] == REFUND[1]
    if decision == "approve":
        gw.approvals.approve(approval.id, by=MANAGER)
    else:
        gw.approvals.reject(approval.id, by=MANAGER, note="too much")
    resumed = agent(resume_prompt(paused))
    assert str(resumed).strip() == "done" and model.turns_taken == 2  # the paused call ran without a model turn
    ((status, text),) = model.read
    if decision == "approve":
        assert status == "success" and json.loads(text) == {"order_id": "o1", "refunded": 900}
        assert runs == {"refunds.issue": 1} and gw.approvals.get(approval.id).status == "executed"
    else:
        assert status == "error" and "rejected by mona (too much)" in text and runs == {}
    assert len(gw.approvals.list(None)) == 1


def test_resumed_before_the_decision_the_model_reads_it_is_pending(
    make_gateway: Factory, scripted_strands_model: Any
) -> None:
    gw, runs = make_gateway()
    model = scripted_strands_model([REFUND])
    agent = agent_for(gw, model)
    paused = agent("refund order o1: 900")
    agent(resume_prompt(paused))
    ((status, text),) = model.read
    assert status == "error" and text.startswith("Pending human approval (apr_") and runs == {}
    (approval,) = gw.approvals.list()
    gw.approvals.approve(approval.id, by=MANAGER)  # decided later: it runs once, when approved
    assert runs == {"refunds.issue": 1}
