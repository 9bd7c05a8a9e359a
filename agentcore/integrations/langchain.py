"""LangChain / LangGraph: the gateway's tools as LangChain tools, with approvals that pause the graph.

Every call goes through the gateway. A denial, invalid arguments or a tool failure is a ``ToolMessage`` with
``status="error"`` the model reads. A call that needs approval raises LangGraph's ``interrupt`` with the approval
request; after ``gw.approvals.approve(...)``, resuming the graph (``Command(resume=approval_id)``) returns the
approved call's result, executed exactly once. Outside a LangGraph run the model reads that the approval is pending.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from langchain_core.tools import BaseTool, ToolException
from langgraph.config import get_config
from langgraph.types import interrupt

from agentcore.gateway.adapters.calls import Caller, ToolSpec, call_blocking, failure, success, tool_specs
from agentcore.gateway.errors import ApprovalRequired, GatewayError
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.integrations.approvals import approval_request


def langchain_tools(
    gw: Gateway,
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> list[BaseTool]:
    """LangChain tools for the gateway tools this principal may use, for any agent, ``ToolNode`` or graph."""
    caller, pending = Caller(principal, agent, session, tenant), _PendingApprovals()
    return [GatewayTool(gw, spec, caller, pending) for spec in tool_specs(gw, principal, agent)]


class _PendingApprovals:
    """The approval each interrupted call waits on, so the re-run of the node after resume asks for no second one.

    Keyed by the LangGraph task and the call; kept in this process (after a restart the re-run requests a new
    approval, and the one already decided is not executed twice).
    """

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(tool: str, args: dict[str, Any]) -> str | None:
        try:
            task = get_config()["configurable"]["checkpoint_ns"]
        except (RuntimeError, KeyError):
            return None  # not inside a LangGraph run: nothing can pause
        return f"{task}|{tool}|{json.dumps(args, sort_keys=True, default=str)}"

    def get(self, key: str | None) -> str | None:
        with self._lock:
            return self._ids.get(key) if key else None

    def put(self, key: str, approval_id: str) -> None:
        with self._lock:
            self._ids[key] = approval_id

    def pop(self, key: str) -> None:
        with self._lock:
            self._ids.pop(key, None)


class GatewayTool(BaseTool):
    """One gateway tool as a LangChain tool; its arguments are validated (and audited) by the gateway."""

    handle_tool_error: bool = True

    def __init__(self, gw: Gateway, spec: ToolSpec, caller: Caller, pending: _PendingApprovals) -> None:
        super().__init__(name=spec.name, description=spec.description or spec.tool, args_schema=spec.schema)
        self._gw, self._tool, self._caller, self._pending = gw, spec.tool, caller, pending

    def _run(self, **args: Any) -> str:
        key = self._pending.key(self._tool, args)
        if (approval_id := self._pending.get(key)) is None:
            try:
                return success(call_blocking(self._gw, self._tool, args, self._caller, "raise")).text
            except ApprovalRequired as error:
                approval_id = self._awaiting(key, error)
            except GatewayError as error:
                raise ToolException(failure(error).text) from None
        approval_id = self._pause(key, approval_id)
        try:
            return success(self._gw.approvals.execute(approval_id)).text
        except GatewayError as error:
            raise ToolException(failure(error).text) from None

    async def _arun(self, **args: Any) -> str:
        key = self._pending.key(self._tool, args)
        if (approval_id := self._pending.get(key)) is None:
            try:
                return success(await self._gw.acall(self._tool, args, **self._caller.options(), approval="raise")).text
            except ApprovalRequired as error:
                approval_id = self._awaiting(key, error)
            except GatewayError as error:
                raise ToolException(failure(error).text) from None
        approval_id = self._pause(key, approval_id)
        try:
            return success(await self._gw.approvals.aexecute(approval_id)).text
        except GatewayError as error:
            raise ToolException(failure(error).text) from None

    def _awaiting(self, key: str | None, error: ApprovalRequired) -> str:
        """Remember the approval to pause on; outside a graph there is no pause, so the model reads it is pending."""
        if key is None:
            raise ToolException(failure(error).text) from None
        self._pending.put(key, error.approval_id)
        return error.approval_id

    def _pause(self, key: str | None, approval_id: str) -> str:
        """LangGraph's interrupt: the run stops here, and continues when resumed; returns the approval to execute.

        Resuming with ``Command(resume=approval_id)`` also survives a restart of this process: the re-run then
        requested a second approval, and the resume value names the decided one for the same call.
        """
        resumed = interrupt(approval_request(self._gw, approval_id, "resume the run"))
        if key is not None:
            self._pending.pop(key)
        if isinstance(resumed, str) and resumed != approval_id:
            try:
                earlier = self._gw.approvals.get(resumed)
            except GatewayError:
                return approval_id
            approval = self._gw.approvals.get(approval_id)
            same = (earlier.tool, earlier.args, earlier.principal) == (approval.tool, approval.args, approval.principal)
            return resumed if same else approval_id
        return approval_id
