"""What every model SDK adapter shares: SDK objects as plain data, one governed call, the text the model sees.

Denials, pending approvals, argument errors and tool failures come back as an :class:`Outcome` the model can read
and act on, never as exceptions, so one bad call does not break the agent loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from agentcore.gateway.errors import ApprovalRequired, GatewayError
from agentcore.gateway.gateway import ApprovalMode, Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.gateway.naming import name_map

Message = dict[str, Any]


@dataclass(frozen=True)
class Caller:
    """Who makes the calls of one model turn."""

    principal: PrincipalLike
    agent: AgentLike = None
    session: str | None = None
    tenant: str | None = None

    def options(self) -> dict[str, Any]:
        return {"principal": self.principal, "agent": self.agent, "session": self.session, "tenant": self.tenant}


@dataclass(frozen=True)
class ToolCall:
    """One call as the model made it: its id, the tool's exposed name and the (parsed) arguments."""

    id: Any
    name: str
    args: Any


@dataclass(frozen=True)
class Outcome:
    """What the model is shown for one call, and whether it is an error."""

    text: str
    is_error: bool


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it (model-safe name, description, JSON schema) and its name on the gateway."""

    name: str
    description: str
    schema: dict[str, Any]
    tool: str


def plain(value: Any) -> Any:
    """SDK objects (pydantic models, tuples of them) as the dicts and lists of their JSON form."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def items(value: Any, key: str) -> list[Any]:
    """The list under ``key`` when ``value`` is the message or response holding it, else ``value`` itself."""
    data = plain(value)
    if isinstance(data, Mapping):
        return list(data.get(key) or [])
    if isinstance(data, Sequence) and not isinstance(data, str):
        return list(data)
    raise TypeError(f"expected a message, a response or a list of its {key}, not {type(value).__name__}")


def parse_arguments(raw: Any) -> Any:
    """OpenAI sends arguments as a JSON string; text that does not parse is passed on so the gateway rejects and
    audits it. That includes JSON too deep for the parser's recursion or with an integer past Python's digit
    limit: the model writes this text, and one hostile call must not raise out of the turn's other calls."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return raw


def tool_specs(gw: Gateway, principal: PrincipalLike, agent: AgentLike = None) -> list[ToolSpec]:
    """The tools this principal may use, under model-safe names."""
    exposed = {tool: name for name, tool in _names(gw).items()}
    return [ToolSpec(exposed[t.name], t.description, t.input_schema, t.name) for t in gw.list_tools(principal, agent)]


def run_calls(gw: Gateway, calls: Sequence[ToolCall], caller: Caller) -> list[Outcome]:
    """Run each call in order. Inside a running event loop the calls run in a worker thread, so async tools work."""
    names = _names(gw)
    outcomes = []
    for call in calls:
        try:
            result = call_blocking(gw, names.get(call.name, call.name), call.args, caller)
        except GatewayError as error:
            outcomes.append(failure(error))
            continue
        outcomes.append(success(result))
    return outcomes


async def arun_calls(gw: Gateway, calls: Sequence[ToolCall], caller: Caller) -> list[Outcome]:
    """Async :func:`run_calls`, through ``gw.acall``."""
    names = _names(gw)
    outcomes = []
    for call in calls:
        try:
            result = await gw.acall(names.get(call.name, call.name), call.args, **caller.options())
        except GatewayError as error:
            outcomes.append(failure(error))
            continue
        outcomes.append(success(result))
    return outcomes


def success(result: Any) -> Outcome:
    """A result as the model reads it: text as it is, anything else as JSON, what JSON cannot hold (a tuple key,
    a set, an object) as redaction sees it. It never raises: the tool has run, and the turn's other results and
    calls must not be lost to it (a caller would retry the turn, and the calls that ran would run again)."""
    if isinstance(result, str):
        return Outcome(result, False)
    try:
        return Outcome(json.dumps(to_jsonable_python(result, fallback=str)), False)
    except (ValueError, RecursionError):  # a circular or too deeply nested result
        return Outcome(
            "Error: the tool ran, but its result cannot be shown (circular or too deep). Do not retry.", True
        )


def failure(error: GatewayError) -> Outcome:
    """The model reads the gateway's model-facing text: a denial's ``agent_message``, or the error's own message."""
    if isinstance(error, ApprovalRequired):
        return Outcome(f"Pending human approval ({error.approval_id}); tell the user it awaits approval.", True)
    return Outcome(f"Error: {getattr(error, 'agent_message', str(error))}", True)


def _names(gw: Gateway) -> dict[str, str]:
    return {exposed: tool for exposed, (_, tool) in name_map((None, t.name) for t in gw.registry).items()}


def call_blocking(gw: Gateway, tool: str, args: Any, caller: Caller, approval: ApprovalMode | None = None) -> Any:
    """``gw.call`` from sync code; inside a running event loop in a worker thread, where async tools can run."""
    options = {**caller.options(), "approval": approval}
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return gw.call(tool, args, **options)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(gw.call, tool, args, **options).result()
