"""Play scripted conversations through an agent, the gateway and memory, and record each as an evaluation trace.

The runner plays the supervisor too: a call that needs approval is granted through the gateway's approvals API
after the turn, as a person at an approvals console would.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict

from agentcore.demo.agent import EXPLANATIONS, Agent, result_text
from agentcore.demo.governance import APPROVER
from agentcore.demo.memory import CustomerMemory
from agentcore.demo.scenarios import ExpectedTool, Script
from agentcore.demo.session import AgentSession, ToolOutcome
from agentcore.evaluations.trace import (
    ExpectedCall,
    ModelCall,
    Retrieval,
    Session,
    SessionReference,
    ToolCall,
    ToolSpec,
    Trace,
    TraceReference,
)
from agentcore.gateway import Gateway

log = logging.getLogger(__name__)


class PlayedSession(BaseModel):
    """One conversation as played: the script, every tool outcome, the trace, and what went off-script."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Script
    customer: str | None
    outcomes: list[ToolOutcome]
    trace: Session
    off_script: list[str]


def play(script: Script, agent: Agent, gateway: Gateway, memory: CustomerMemory, *, tenant: str) -> PlayedSession:
    """Play one script turn by turn; approvals are granted by the demo's supervisor."""
    session = AgentSession(script.session_id, gateway, memory, tenant=tenant)
    tools = [ToolSpec(**t["function"]) for t in session.tool_schemas]
    traces, call_number = [], 0
    for number, turn in enumerate(script.turns, start=1):
        start = len(session.outcomes)
        reply = agent.respond(turn.say, session)
        for outcome in list(session.outcomes[start:]):
            if outcome.status == "needs_approval":
                granted = session.approve(outcome, APPROVER, note=f"demo supervisor: {script.title}")
                reply += " " + _approval_text(granted)
        spans: list[ToolCall | Retrieval | ModelCall] = []
        for outcome in session.outcomes[start:]:
            call_number += 1
            spans.append(_span(f"{script.session_id}/call-{call_number}", outcome))
        reference = TraceReference(expected_tool_calls=[_expected_call(call) for call in turn.tools])
        traces.append(Trace(id=f"{script.session_id}/turn-{number}", input=turn.say, output=reply, spans=spans,
                            reference=reference))  # fmt: skip
    if session.customer is not None:
        turns = [
            (role, text) for trace in traces for role, text in (("user", trace.input), ("assistant", trace.output))
        ]
        memory.log(session.customer, script.session_id, turns)
    off_script = script.check(session.outcomes)
    if off_script:
        log.warning("session %s went off script: %s", script.session_id, "; ".join(off_script))
    return PlayedSession(
        script=script,
        customer=session.customer,
        outcomes=session.outcomes,
        trace=Session(id=script.session_id, traces=traces, tools=tools, reference=_reference(script)),
        off_script=off_script,
    )


def _span(span_id: str, outcome: ToolOutcome) -> ToolCall:
    failed = outcome.status in ("error", "invalid", "denied")
    return ToolCall(
        id=span_id, name=outcome.tool, arguments=outcome.arguments, result=outcome.result,
        error=outcome.message if failed else None, decision=outcome.decision,
    )  # fmt: skip


def _reference(script: Script) -> SessionReference:
    """Ground truth: the scripted calls meant to succeed are the goals, and so is telling the customer why a call
    the policy must deny was refused (an assertion, matched semantically); the scripted tools are the trajectory."""
    expected = [call for turn in script.turns for call in turn.tools]
    actions, position = [], 0
    for goal in (e for e in script.expect if e.status in ("ok", "approved")):
        found = next((i for i in range(position, len(expected)) if expected[i].name == goal.tool), None)
        if found is None:
            raise ValueError(f"scenario {script.template}: no turn expects the call to {goal.tool} its script expects")
        actions.append(_expected_call(expected[found]))
        position = found + 1
    told = [EXPLANATIONS[e.rule] for e in script.expect if e.status == "denied" and e.rule in EXPLANATIONS]
    return SessionReference(
        expected_actions=actions, assertions=told, expected_trajectory=[e.tool for e in script.expect]
    )


def _expected_call(call: ExpectedTool) -> ExpectedCall:
    return ExpectedCall(name=call.name, arguments={name: [value] for name, value in call.arguments.items()})


def _approval_text(outcome: ToolOutcome) -> str:
    if outcome.status == "approved":
        return f"Good news: a supervisor approved it. {result_text(outcome.tool, outcome.result)}"
    return f"The approval could not be completed: {outcome.message}"
