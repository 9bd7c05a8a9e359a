"""OpenAI Agents SDK: the gateway's tools as function tools, with approvals through the SDK's ``needs_approval``.

A call the policy sends to approval requests a gateway approval and interrupts the run (``result.interruptions``).
After ``gw.approvals.approve(...)`` (or ``reject``), ``resume_state(result)`` marks the decided interruptions in
the SDK and ``Runner.run(agent, state)`` continues: the approved call runs exactly once (or the model reads that it
was rejected). Denials, invalid arguments and tool failures are the tool's output, which the model reads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from agents import FunctionTool, RunContextWrapper, RunResult, RunState
from agents.tool_context import ToolContext

from agentcore.gateway.adapters.calls import Caller, ToolSpec, failure, parse_arguments, success, tool_specs
from agentcore.gateway.errors import ApprovalRequired, GatewayError
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.policies.model import Effect

DECIDED = ("approved", "executing", "executed", "rejected", "expired", "failed")


def agents_tools(
    gw: Gateway,
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> list[FunctionTool]:
    """Function tools for the gateway tools this principal may use: ``Agent(..., tools=agents_tools(gw, ...))``."""
    caller, pending = Caller(principal, agent, session, tenant), _Pending()
    return [_function_tool(gw, spec, caller, pending) for spec in tool_specs(gw, principal, agent)]


def resume_state(result: RunResult) -> RunState[Any]:
    """The run's state with every interruption whose gateway approval is decided approved in the SDK.

    The gateway's decision is what counts: a rejected call is let through to the tool, which reports the rejection
    to the model. Interruptions still pending stay pending (the resumed run stops on them again). One with no
    gateway approval (the SDK interrupts by itself on arguments it cannot parse, such as malformed JSON) is let
    through too: the tool's call goes to the gateway, which refuses (and audits) them, and the run goes on.
    """
    state = result.to_state()
    for item in result.interruptions:
        tool = next((t for t in result.last_agent.tools if t.name == item.tool_name), None)
        if isinstance(tool, GatewayFunctionTool):
            approval_id = tool.pending.get(str(getattr(item.raw_item, "call_id", "")))
            if approval_id is None or tool.gateway.approvals.get(approval_id).status in DECIDED:
                state.approve(item)
    return state


@dataclass
class _Pending:
    """The gateway approval requested for each SDK call id (kept in this process), and calls already run."""

    ids: dict[str, str] = field(default_factory=dict)
    settled: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, call_id: str) -> str | None:
        with self.lock:
            return self.ids.get(call_id)

    def put(self, call_id: str, approval_id: str) -> None:
        with self.lock:
            self.ids[call_id] = approval_id

    def pop(self, call_id: str) -> str | None:
        with self.lock:
            return self.ids.pop(call_id, None)


@dataclass
class GatewayFunctionTool(FunctionTool):
    """A FunctionTool that also knows its gateway and the approvals its calls wait on."""

    gateway: Gateway = field(kw_only=True)
    pending: _Pending = field(kw_only=True)


def _function_tool(gw: Gateway, spec: ToolSpec, caller: Caller, pending: _Pending) -> FunctionTool:
    async def needs_approval(_: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        """Ask the gateway (a dry run); when the policy wants an approval, request it now and interrupt."""
        if pending.get(call_id):
            return True
        try:
            if gw.decide(spec.tool, params, **caller.options()).effect is not Effect.NEEDS_APPROVAL:
                return False
            result = await gw.acall(spec.tool, params, **caller.options(), approval="raise")
        except ApprovalRequired as error:
            pending.put(call_id, error.approval_id)
            return True
        except GatewayError:
            return False  # the call itself reports the error to the model
        pending.settled[call_id] = success(result).text  # the policy changed meanwhile and the call ran: once
        return False

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        if (ran := pending.settled.pop(context.tool_call_id, None)) is not None:
            return ran
        approval_id = pending.pop(context.tool_call_id)
        try:
            if approval_id is not None:
                return success(await gw.approvals.aexecute(approval_id)).text
            args = parse_arguments(arguments)
            return success(await gw.acall(spec.tool, args, **caller.options(), approval="raise")).text
        except GatewayError as error:
            return failure(error).text

    return GatewayFunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=spec.schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,
        needs_approval=needs_approval,
        gateway=gw,
        pending=pending,
    )
