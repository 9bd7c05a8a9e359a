"""pydantic-ai: the gateway's tools as a toolset, with approvals as pydantic-ai's deferred (approval-required) calls.

A call the policy sends to approval requests a gateway approval and ends the run with ``DeferredToolRequests``
(give the agent ``output_type=[str, DeferredToolRequests]``). After ``gw.approvals.approve(...)`` (or ``reject``),
``toolset.results(requests)`` is the ``deferred_tool_results=`` of the next run: the approved call runs exactly
once, or the model reads that it was rejected. Invalid arguments are a ``ModelRetry`` (the model corrects them);
denials and tool failures are the tool's result, which the model reads.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import (
    AbstractToolset,
    DeferredToolRequests,
    DeferredToolResults,
    ModelRetry,
    RunContext,
    ToolDefinition,
    ToolsetTool,
)
from pydantic_ai import ApprovalRequired as Deferred
from pydantic_core import SchemaValidator, core_schema

from agentcore.gateway.adapters.calls import Caller, failure, success, tool_specs
from agentcore.gateway.errors import ApprovalRequired, GatewayError, ToolArgumentError, UnknownToolError
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike

_ANY = SchemaValidator(core_schema.any_schema())  # the gateway validates (and audits) the arguments
_PENDING = "pending"


class GatewayToolset(AbstractToolset[Any]):
    """The gateway tools this principal may use, for ``Agent(..., toolsets=[GatewayToolset(gw, principal=...)])``."""

    def __init__(
        self,
        gw: Gateway,
        *,
        principal: PrincipalLike,
        agent: AgentLike = None,
        session: str | None = None,
        tenant: str | None = None,
        max_retries: int = 1,
        id: str | None = None,
    ) -> None:
        self.gw, self.caller, self.max_retries, self._id = (
            gw,
            Caller(principal, agent, session, tenant),
            max_retries,
            id,
        )
        self._tools = {spec.name: spec for spec in tool_specs(gw, principal, agent)}

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(name=name, description=spec.description, parameters_json_schema=spec.schema),
                max_retries=self.max_retries,
                args_validator=_ANY,
            )
            for name, spec in self._tools.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        approval_id = (ctx.tool_call_metadata or {}).get("approval_id") if ctx.tool_call_approved else None
        try:
            if approval_id:
                return success(await self.gw.approvals.aexecute(approval_id)).text
            tool_name = self._tools[name].tool
            return success(await self.gw.acall(tool_name, tool_args, **self.caller.options(), approval="raise")).text
        except ApprovalRequired as error:
            raise Deferred(metadata={"approval_id": error.approval_id}) from None
        except (ToolArgumentError, UnknownToolError) as error:
            raise ModelRetry(failure(error).text) from None
        except GatewayError as error:
            return failure(error).text

    def results(self, requests: DeferredToolRequests) -> DeferredToolResults:
        """The ``deferred_tool_results=`` for every requested approval the gateway has decided (approved or not)."""
        results = DeferredToolResults()
        for call in requests.approvals:
            metadata = requests.metadata.get(call.tool_call_id, {})
            approval_id = metadata.get("approval_id")
            if approval_id and self.gw.approvals.get(approval_id).status != _PENDING:
                results.approvals[call.tool_call_id] = True  # the gateway's decision is what the tool reports
                results.metadata[call.tool_call_id] = metadata
        return results
