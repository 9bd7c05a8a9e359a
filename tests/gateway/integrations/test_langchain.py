"""LangChain tools and a LangGraph graph (ToolNode, checkpointer, interrupt) driven by LangChain's fake chat model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from agentcore import Gateway
from agentcore.gateway.errors import ApprovalRequired
from agentcore.integrations.langchain import langchain_tools

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}
CONFIG: Any = {"configurable": {"thread_id": "t1"}}


def scripted(*calls: tuple[str, dict[str, Any]]) -> GenericFakeChatModel:
    """A fake model that asks for ``calls`` in one turn, then answers "done"."""
    ask = AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"call_{i}"} for i, (n, a) in enumerate(calls)])
    return GenericFakeChatModel(messages=iter([ask, AIMessage("done")]))


def graph(
    gw: Gateway, model: GenericFakeChatModel, saver: InMemorySaver | None = None, tenant: str | None = None
) -> Any:
    """An existing agent graph; the only agentcore line is ``langchain_tools(...)``."""
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(langchain_tools(gw, principal=SUPPORT, session="s1", tenant=tenant)))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver or InMemorySaver())


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def test_allow_deny_and_invalid_arguments_come_back_as_tool_messages(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    lookup, bad_email = ("crm_lookup", {"customer_id": "c1"}), ("email_send", {"recipient": "eve@evil.test"})
    model = scripted(lookup, bad_email, ("crm_lookup", {}))
    state = graph(gw, model).invoke({"messages": [HumanMessage("look up c1")]}, CONFIG)
    allowed, denied, invalid = tool_messages(state)
    assert allowed.status == "success" and json.loads(allowed.content)["email"] == "[REDACTED:email]"
    assert denied.status == "error" and "denied by policy" in denied.content
    assert invalid.status == "error" and "invalid arguments" in invalid.content
    assert state["messages"][-1].content == "done"
    assert runs == {"crm.lookup": 1}
    effects = sorted(str(row["effect"]) for row in gw.audit.rows())  # run in parallel
    assert effects == ["None", "allow", "deny", "deny"]  # the allowed call's outcome record has no effect


@pytest.mark.parametrize("tenant", [None, "acme"])
def test_approval_interrupts_the_graph_and_resumes_with_one_execution(
    make_gateway: Factory, tenant: str | None
) -> None:
    gw, runs = make_gateway()
    agent = graph(gw, scripted(("refunds_issue", {"order_id": "o1", "amount": 900})), tenant=tenant)
    paused = agent.invoke({"messages": [HumanMessage("refund 900")]}, CONFIG)
    (request,) = paused["__interrupt__"]
    approval_id = request.value["approval_id"]
    assert request.value["approver_roles"] == ["manager"] and runs == {}
    shown = f"gw.approvals.approve({approval_id!r}, by=...{'' if tenant is None else ', tenant=' + repr(tenant)})"
    assert shown in request.value["message"]  # a request of a tenant is decided by that tenant's approvers
    gw.approvals.approve(approval_id, by=MANAGER, tenant=tenant)
    (result,) = tool_messages(agent.invoke(Command(resume=approval_id), CONFIG))
    assert json.loads(result.content) == {"order_id": "o1", "refunded": 900}
    assert runs == {"refunds.issue": 1}
    assert [a.status for a in gw.approvals.list(None)] == ["executed"]  # the re-run asked for no second approval


def test_rejected_approval_reads_as_a_denial(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    agent = graph(gw, scripted(("refunds_issue", {"order_id": "o1", "amount": 900})))
    approval_id = agent.invoke({"messages": [HumanMessage("refund")]}, CONFIG)["__interrupt__"][0].value["approval_id"]
    gw.approvals.reject(approval_id, by=MANAGER, note="too much")
    (result,) = tool_messages(agent.invoke(Command(resume=True), CONFIG))
    assert result.status == "error" and "rejected" in result.content and runs == {}


def test_async_tool_through_ainvoke_and_pending_outside_a_graph(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    agent = graph(gw, scripted(("notes_add", {"text": "hello"})))
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage("note")]}, CONFIG))
    assert [m.content for m in tool_messages(state)] == ["hello"] and runs == {"notes.add": 1}
    refund = next(t for t in langchain_tools(gw, principal=SUPPORT) if t.name == "refunds_issue")
    reply = refund.invoke({"type": "tool_call", "id": "c9", "name": "refunds_issue",
                           "args": {"order_id": "o1", "amount": 900}})  # fmt: skip
    assert reply.status == "error" and reply.content.startswith("Pending human approval (apr_")


def test_sync_invoke_of_an_async_tool_inside_a_running_loop(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    (note,) = [t for t in langchain_tools(gw, principal=SUPPORT) if t.name == "notes_add"]

    async def from_async_code() -> Any:
        return note.invoke({"type": "tool_call", "id": "c1", "name": "notes_add", "args": {"text": "hi"}})

    reply = asyncio.run(from_async_code())
    assert (reply.status, reply.content) == ("success", "hi") and runs == {"notes.add": 1}


def test_resume_with_the_approval_id_survives_a_restart(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    saver = InMemorySaver()  # the checkpoints outlive the process; the tools (and what they remember) do not
    first = graph(gw, scripted(("refunds_issue", {"order_id": "o1", "amount": 900})), saver)
    approval_id = first.invoke({"messages": [HumanMessage("refund")]}, CONFIG)["__interrupt__"][0].value["approval_id"]
    gw.approvals.approve(approval_id, by=MANAGER)  # executes the refund now
    restarted = graph(gw, GenericFakeChatModel(messages=iter([AIMessage("done")])), saver)
    (result,) = tool_messages(restarted.invoke(Command(resume=approval_id), CONFIG))
    assert json.loads(result.content) == {"order_id": "o1", "refunded": 900}  # the decided call's result
    assert runs == {"refunds.issue": 1}
    assert sorted(a.status for a in gw.approvals.list(None)) == ["executed", "pending"]  # the re-run's, unused


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "ainvoke in two loops"])
def test_resuming_runs_the_other_calls_of_the_message_no_second_time(make_gateway: Factory, mode: str) -> None:
    gw, runs = make_gateway()
    refund = "refunds_issue"
    calls = [("crm_lookup", {"customer_id": "c1"}), (refund, {"order_id": "o1", "amount": 900}),
             (refund, {"order_id": "o2", "amount": 100}), ("email_send", {"recipient": "eve@evil.test"})]  # fmt: skip
    agent = graph(gw, scripted(*calls))

    async def in_one_loop() -> Any:  # the first run's calls may still be in flight when the re-run makes them
        paused = await agent.ainvoke({"messages": [HumanMessage("refunds")]}, CONFIG)
        gw.approvals.approve(paused["__interrupt__"][0].value["approval_id"], by=MANAGER)
        return await agent.ainvoke(Command(resume=True), CONFIG)

    if mode == "ainvoke":
        state = asyncio.run(in_one_loop())
    else:  # in two loops the first one's end cancels the calls still in flight
        run = agent.invoke if mode == "invoke" else lambda value, config: asyncio.run(agent.ainvoke(value, config))
        paused = run({"messages": [HumanMessage("refunds")]}, CONFIG)
        gw.approvals.approve(paused["__interrupt__"][0].value["approval_id"], by=MANAGER)
        state = run(Command(resume=True), CONFIG)  # LangGraph runs the whole ToolNode again
    results = tool_messages(state)
    assert [m.tool_call_id for m in results] == ["call_0", "call_1", "call_2", "call_3"]
    assert json.loads(results[1].content) == {"order_id": "o1", "refunded": 900}
    cancelled = [m.status == "error" and "it may have run. Do not retry it." in m.content for m in results]
    assert mode == "ainvoke in two loops" or not any(cancelled)  # only a closing loop cancels a call in flight
    if not cancelled[2]:
        assert json.loads(results[2].content) == {"order_id": "o2", "refunded": 100}
        assert runs["refunds.issue"] == 2  # o2 was refunded once, not again on the re-run
    lookups = runs.get("crm.lookup", 0)
    assert runs["refunds.issue"] <= 2 and (lookups == 1 or (cancelled[0] and lookups == 0))
    assert "email.send" not in runs
    denies = [row["effect"] for row in gw.audit.rows()].count("deny")
    if cancelled[3]:  # the adapter cannot tell how far the gateway got: the deny was recorded at most once
        assert denies <= 1
    else:
        assert results[3].status == "error" and "denied by policy" in results[3].content and denies == 1


@pytest.mark.parametrize("other", [{"tenant": "globex"}, {"agent": "other-bot"}])
def test_resume_with_another_callers_approval_runs_not_theirs(make_gateway: Factory, other: dict[str, Any]) -> None:
    """The resume value may name only a decided approval of this very call: same tool, arguments, principal,
    agent and tenant. Another tenant's (or agent's) approved twin is theirs: its result must not reach this run."""
    gw, runs = make_gateway()
    refund = {"order_id": "o1", "amount": 900}
    agent = graph(gw, scripted(("refunds_issue", refund)), tenant="acme")
    mine = agent.invoke({"messages": [HumanMessage("refund")]}, CONFIG)["__interrupt__"][0].value["approval_id"]
    theirs = {"session": "s1", "tenant": "acme", "agent": None, **other}
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("refunds.issue", refund, principal=SUPPORT, approval="raise", **theirs)
    gw.approvals.approve(pending.value.approval_id, by=MANAGER, tenant=theirs["tenant"])
    ran = dict(runs)
    (result,) = tool_messages(agent.invoke(Command(resume=pending.value.approval_id), CONFIG))
    assert result.status == "error" and "refunded" not in result.content  # this run's own request is undecided
    assert gw.approvals.get(mine).status == "pending" and runs == ran
