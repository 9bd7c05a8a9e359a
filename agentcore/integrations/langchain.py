"""LangChain / LangGraph: the gateway's tools as LangChain tools, with approvals that pause the graph.

Every call goes through the gateway. A denial, invalid arguments or a tool failure is a ``ToolMessage`` with
``status="error"`` the model reads. A call that needs approval raises LangGraph's ``interrupt`` with the approval
request; after ``gw.approvals.approve(...)``, resuming the graph (``Command(resume=approval_id)``) returns the
approved call's result, executed exactly once; the other calls of the interrupted node are not made again (see
``_TaskMemory``). Outside a LangGraph run the model reads that the approval is pending.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from langgraph.config import get_config
from langgraph.types import interrupt

from agentcore.gateway.adapters.calls import Caller, Outcome, ToolSpec, call_blocking, failure, success, tool_specs
from agentcore.gateway.approvals import Approval
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
    caller, memory = Caller(principal, agent, session, tenant), _TaskMemory()
    return [GatewayTool(gw, spec, caller, memory) for spec in tool_specs(gw, principal, agent)]


_CALL_ID: ContextVar[str | None] = ContextVar("agentcore_langchain_tool_call_id", default=None)
_REMEMBERED = 10_000  # calls whose outcome is kept per langchain_tools() list, for re-runs of their nodes
# a call cancelled while it was in the gateway (its event loop closed): it may have run, so a re-run must not repeat it
_UNKNOWN = Outcome(
    "Error: this call was cancelled before its outcome was known; it may have run. Do not retry it.", True
)


class _TaskMemory:
    """What each LangGraph task's calls did, so that a re-run of its node repeats none of them.

    LangGraph re-runs a whole node when it resumes after an interrupt: a ``ToolNode`` whose message asked for one
    call that needs approval and others that ran would run those others again (a second refund). So the approval
    each interrupted call waits on is kept by task and call, and the outcome of each call that reached the gateway
    by task, call and tool call id (the last ``_REMEMBERED``): a re-run reads it, or waits for it while the first
    run's call is still in flight. Kept in this process: after a restart the re-run requests a new approval (the
    one already decided is not executed twice) and makes the other calls again.
    """

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._outcomes: OrderedDict[str, concurrent.futures.Future[Outcome]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(tool: str, args: dict[str, Any]) -> str | None:
        try:
            task = get_config()["configurable"]["checkpoint_ns"]
        except (RuntimeError, KeyError):
            return None  # not inside a LangGraph run: nothing can pause or re-run
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

    def once(self, key: str | None, make: Callable[[], Outcome]) -> str:
        """The text the model reads of this call: made by ``make`` unless an earlier run of the node made it."""
        call, future, mine = self._claim(key)
        if not mine:
            return _reply(future.result())
        try:
            outcome = make()
        except BaseException as exc:
            self._settle(call, future, exc)
            raise
        future.set_result(outcome)
        return _reply(outcome)

    async def aonce(self, key: str | None, make: Callable[[], Awaitable[Outcome]]) -> str:
        """Async :meth:`once`."""
        call, future, mine = self._claim(key)
        if not mine:
            return _reply(await asyncio.wrap_future(future))
        try:
            outcome = await make()
        except BaseException as exc:
            self._settle(call, future, exc)
            raise
        future.set_result(outcome)
        return _reply(outcome)

    def _claim(self, key: str | None) -> tuple[str | None, concurrent.futures.Future[Outcome], bool]:
        """The call (its key and tool call id; None outside a graph or without an id), the future of its outcome,
        and whether this run makes it (False: an earlier run of the node made it, or is making it)."""
        call_id, future = _CALL_ID.get(), concurrent.futures.Future[Outcome]()
        future.set_running_or_notify_cancel()  # a cancelled waiter (asyncio.wrap_future) cannot cancel it
        if key is None or call_id is None:
            return None, future, True
        call = f"{key}|{call_id}"
        with self._lock:
            if (earlier := self._outcomes.get(call)) is not None:
                return call, earlier, False
            self._outcomes[call] = future
            if len(self._outcomes) > _REMEMBERED:
                self._outcomes.popitem(last=False)
        return call, future, True

    def _settle(self, call: str | None, future: concurrent.futures.Future[Outcome], error: BaseException) -> None:
        """A call that raised. Cancelled, it may have run: a re-run reads that, and runs nothing. Otherwise (the
        interrupt of a call that waits for approval, a caller's mistake) it is forgotten: a re-run makes it."""
        if isinstance(error, asyncio.CancelledError):
            future.set_result(_UNKNOWN)
            return
        with self._lock:
            if call is not None and self._outcomes.get(call) is future:
                del self._outcomes[call]
        future.set_exception(error)


def _reply(outcome: Outcome) -> str:
    if outcome.is_error:
        raise ToolException(outcome.text) from None  # the gateway's developer text stays out of the tool message
    return outcome.text


class GatewayTool(BaseTool):
    """One gateway tool as a LangChain tool; its arguments are validated (and audited) by the gateway."""

    handle_tool_error: bool = True

    def __init__(self, gw: Gateway, spec: ToolSpec, caller: Caller, memory: _TaskMemory) -> None:
        super().__init__(name=spec.name, description=spec.description or spec.tool, args_schema=spec.schema)
        self._gw, self._tool, self._caller, self._memory = gw, spec.tool, caller, memory

    def invoke(
        self, input: str | dict[str, Any] | ToolCall, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        with _call_id(input):
            return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str | dict[str, Any] | ToolCall, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        with _call_id(input):
            return await super().ainvoke(input, config, **kwargs)

    def _run(self, **args: Any) -> str:
        key = self._memory.key(self._tool, args)
        return self._memory.once(key, lambda: self._call(key, args))

    async def _arun(self, **args: Any) -> str:
        key = self._memory.key(self._tool, args)
        return await self._memory.aonce(key, lambda: self._acall(key, args))

    def _call(self, key: str | None, args: dict[str, Any]) -> Outcome:
        if (approval_id := self._memory.get(key)) is None:
            try:
                return success(call_blocking(self._gw, self._tool, args, self._caller, "raise"))
            except ApprovalRequired as error:
                approval_id = self._awaiting(key, error)
            except GatewayError as error:
                return failure(error)
        approval_id = self._pause(key, approval_id)
        try:
            return success(self._gw.approvals.execute(approval_id))
        except GatewayError as error:
            return failure(error)

    async def _acall(self, key: str | None, args: dict[str, Any]) -> Outcome:
        if (approval_id := self._memory.get(key)) is None:
            try:
                return success(await self._gw.acall(self._tool, args, **self._caller.options(), approval="raise"))
            except ApprovalRequired as error:
                approval_id = self._awaiting(key, error)
            except GatewayError as error:
                return failure(error)
        approval_id = self._pause(key, approval_id)
        try:
            return success(await self._gw.approvals.aexecute(approval_id))
        except GatewayError as error:
            return failure(error)

    def _awaiting(self, key: str | None, error: ApprovalRequired) -> str:
        """Remember the approval to pause on; outside a graph there is no pause, so the model reads it is pending."""
        if key is None:
            raise ToolException(failure(error).text) from None
        self._memory.put(key, error.approval_id)
        return error.approval_id

    def _pause(self, key: str | None, approval_id: str) -> str:
        """LangGraph's interrupt: the run stops here, and continues when resumed; returns the approval to execute.

        Resuming with ``Command(resume=approval_id)`` also survives a restart of this process: the re-run then
        requested a second approval, and the resume value names the decided one for the same call.
        """
        resumed = interrupt(approval_request(self._gw, approval_id, "resume the run"))
        if key is not None:
            self._memory.pop(key)
        if isinstance(resumed, str) and resumed != approval_id:
            try:
                earlier = self._gw.approvals.get(resumed)
            except GatewayError:
                return approval_id
            return resumed if _same_call(earlier, self._gw.approvals.get(approval_id)) else approval_id
        return approval_id


def _same_call(earlier: Approval, approval: Approval) -> bool:
    """Whether two requests are one call as the gateway counts it (tool, arguments, principal, agent, tenant),
    with the same roles. Another tenant's or agent's twin is theirs: executed here, its result would go to this run."""
    caller = (approval.tool, approval.args, approval.requester, str(approval.agent.get("id")), approval.tenant)
    return earlier.principal == approval.principal and earlier.is_call(*caller)


@contextlib.contextmanager
def _call_id(input: Any) -> Iterator[None]:
    """The tool call id (of a ``ToolCall`` input, as a ``ToolNode`` sends) for ``_run``, which sees only arguments."""
    call_id = input.get("id") if isinstance(input, dict) and input.get("type") == "tool_call" else None
    token = _CALL_ID.set(str(call_id) if call_id else None)
    try:
        yield
    finally:
        _CALL_ID.reset(token)
