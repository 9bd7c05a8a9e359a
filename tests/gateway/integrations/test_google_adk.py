"""Google ADK: the gateway tools run by a real ``LlmAgent`` in an ``InMemoryRunner`` with a scripted ``BaseLlm``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models import BaseLlm
from google.adk.runners import InMemoryRunner
from google.genai import types

from agentcore import Gateway
from agentcore.integrations.google_adk import adk_tools, approval_requests, resume_message

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}
REFUND = ("refunds_issue", {"order_id": "o1", "amount": 900})


async def run(runner: InMemoryRunner, session: str, message: types.Content) -> list[Event]:
    return [e async for e in runner.run_async(user_id="alice", session_id=session, new_message=message)]


def start(gw: Gateway, llm: BaseLlm) -> tuple[InMemoryRunner, str]:
    agent = LlmAgent(name="support", model=llm, tools=adk_tools(gw, principal=SUPPORT))
    runner = InMemoryRunner(agent=agent, app_name="support")
    session = asyncio.run(runner.session_service.create_session(app_name="support", user_id="alice"))
    return runner, session.id


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def test_allow_deny_invalid_arguments_and_async_tool(make_gateway: Factory, scripted_adk_llm: Any) -> None:
    gw, runs = make_gateway()
    llm = scripted_adk_llm(
        [("crm_lookup", {"customer_id": "c1"}), ("email_send", {"recipient": "eve@evil.test"}), ("crm_lookup", {})],
        [("notes_add", {"text": "hello"})],  # an async tool
    )
    runner, session = start(gw, llm)
    events = asyncio.run(run(runner, session, user("look up c1")))
    assert events[-1].content.parts[0].text == "done"
    allowed, denied, invalid, note = llm.read
    assert json.loads(allowed["result"])["email"] == "[REDACTED:email]"
    assert denied["error"].startswith("Error: Tool call 'email.send' was denied by policy")
    assert invalid["error"].startswith("Error: invalid arguments for 'crm.lookup'")
    assert note == {"result": "hello"}
    assert runs == {"crm.lookup": 1, "notes.add": 1}


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_approval_is_an_adk_confirmation_and_resumes_with_one_execution(
    make_gateway: Factory, scripted_adk_llm: Any, decision: str
) -> None:
    gw, runs = make_gateway()
    llm = scripted_adk_llm([REFUND])
    runner, session = start(gw, llm)
    events = asyncio.run(run(runner, session, user("refund order o1: 900")))
    ((_, approval_id),) = approval_requests(events).items()
    assert runs == {} and gw.approvals.get(approval_id).status == "pending"
    if decision == "approve":
        gw.approvals.approve(approval_id, by=MANAGER)
    else:
        gw.approvals.reject(approval_id, by=MANAGER, note="too much")
    events = asyncio.run(run(runner, session, resume_message(events)))
    assert events[-1].content.parts[0].text == "done"
    if decision == "approve":
        assert json.loads(llm.read[-1]["result"]) == {"order_id": "o1", "refunded": 900} and runs == {
            "refunds.issue": 1
        }
    else:
        assert "rejected by mona (too much)" in llm.read[-1]["error"] and runs == {}
    assert len(gw.approvals.list(None)) == 1
