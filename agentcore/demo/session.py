"""One conversation's door to the world: tool calls through the gateway, on behalf of the right principal.

The session, not the agent, decides who the principal is: a guest until an identification tool succeeds, then
that customer. Whatever agent is plugged in (scripted or an LLM), it cannot pick whom it acts for, and every call
it makes lands in the gateway's audit log and in this session's outcomes, which become the evaluation trace.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agentcore.demo.governance import customer, guest
from agentcore.demo.memory import CustomerMemory
from agentcore.gateway import (
    ApprovalRequired,
    Gateway,
    GatewayError,
    ToolArgumentError,
    ToolDenied,
    ToolExecutionError,
    UnknownToolError,
)
from agentcore.policies.model import Principal

IDENTIFY = ("find_user_id_by_email", "find_user_id_by_name_zip")
Status = Literal["ok", "denied", "needs_approval", "approved", "error", "invalid"]


class ToolOutcome(BaseModel):
    """What happened to one tool call: the gateway's verdict, the result or error, and the rules that decided."""

    tool: str
    arguments: dict[str, Any]
    status: Status
    result: Any = None
    message: str = ""
    rules: list[str] = Field(default_factory=list)
    approval_id: str | None = None

    @property
    def decision(self) -> str:
        """The gateway's decision in trace vocabulary (allow / deny / needs_approval)."""
        return {"denied": "deny", "needs_approval": "needs_approval", "invalid": "deny"}.get(self.status, "allow")


class AgentSession:
    """Tool calls for one conversation; ``customer`` is set once identification succeeds; ``memory`` is optional."""

    def __init__(
        self,
        session_id: str,
        gateway: Gateway,
        memory: CustomerMemory | None = None,
        *,
        tenant: str,
        agent_id: str = "retail-agent",
    ) -> None:
        self.session_id = session_id
        self.gateway = gateway
        self.memory = memory
        self.tenant = tenant
        self.agent_id = agent_id
        self.customer: str | None = None
        self.principal: Principal = guest(session_id)
        self.outcomes: list[ToolOutcome] = []
        self.cache: dict[str, Any] = {}

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools this session may offer a model, as Chat Completions function tools (``{"type": "function",
        "function": {name, description, parameters}}``), the shape most model APIs take."""
        return [
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
            }
            for tool in self.gateway.registry
        ]

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call ``tool`` through the gateway as the current principal; never raises for a denied or failed call."""
        try:
            result = self.gateway.call(
                tool, arguments, principal=self.principal, agent=self.agent_id, session=self.session_id,
                tenant=self.tenant,
            )  # fmt: skip
            outcome = ToolOutcome(tool=tool, arguments=arguments, status="ok", result=result)
        except ToolDenied as exc:
            rules = [str(getattr(r, "rule_id", "rate-limit")) for r in exc.reasons]
            outcome = ToolOutcome(tool=tool, arguments=arguments, status="denied", message=str(exc), rules=rules)
        except ApprovalRequired as exc:
            rules = self.gateway.approvals.get(exc.approval_id).rules
            outcome = ToolOutcome(tool=tool, arguments=arguments, status="needs_approval", message=str(exc),
                                  rules=list(rules), approval_id=exc.approval_id)  # fmt: skip
        except ToolExecutionError as exc:
            outcome = ToolOutcome(tool=tool, arguments=arguments, status="error", message=_cause(exc))
        except (ToolArgumentError, UnknownToolError) as exc:
            outcome = ToolOutcome(tool=tool, arguments=arguments, status="invalid", message=str(exc))
        if outcome.status == "ok" and tool in IDENTIFY and self.customer is None:
            self.customer = str(outcome.result)
            self.principal = customer(self.customer, "email" if tool == IDENTIFY[0] else "name and zip code")
        self.outcomes.append(outcome)
        return outcome

    def approve(self, outcome: ToolOutcome, approver: Principal, note: str) -> ToolOutcome:
        """Grant a pending approval through the gateway's approvals API as an approver of this session's tenant;
        the call then runs exactly once."""
        if outcome.approval_id is None:
            raise ValueError(f"the call to {outcome.tool} is not waiting for an approval")
        try:
            result = self.gateway.approvals.approve(outcome.approval_id, by=approver, tenant=self.tenant, note=note)
            done = ToolOutcome(tool=outcome.tool, arguments=outcome.arguments, status="approved", result=result,
                               approval_id=outcome.approval_id, message=f"approved by {approver.id}")  # fmt: skip
        except GatewayError as exc:
            done = ToolOutcome(tool=outcome.tool, arguments=outcome.arguments, status="error", message=str(exc),
                               approval_id=outcome.approval_id)  # fmt: skip
        self.outcomes.append(done)
        return done


def _cause(exc: ToolExecutionError) -> str:
    text = str(exc)
    return text.split("RetailError: ", 1)[-1]
