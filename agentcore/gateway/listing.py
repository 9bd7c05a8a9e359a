"""Which tools a caller could ever be allowed to call, for per-caller tool lists.

AgentCore lists a tool when *any* caller could be permitted; we list it only when *this* principal could be:
some allow or approval rule for the tool names a subject the principal satisfies (conditions on arguments,
state or time are assumed satisfiable), and no unconditional deny for this principal covers it. With a
``default allow`` bundle every tool not unconditionally denied is listed. Listing is advisory: every call is
still decided in full.
"""

from __future__ import annotations

from agentcore.policies.compiler import CompiledRule
from agentcore.policies.engine import PolicyEngine
from agentcore.policies.model import AgentInfo, Effect, Principal


def _subjects_hold(rule: CompiledRule, principal: Principal, agent: AgentInfo, *, definitely: bool) -> bool:
    """Do the rule's subjects hold? Tenant is unknown at list time: possible, but not definite."""
    for subject in rule.rule.subjects:
        if subject.kind == "role" and subject.value not in principal.roles:
            return False
        if subject.kind == "user" and subject.value != principal.id:
            return False
        if subject.kind == "agent" and subject.value != agent.id:
            return False
        if subject.kind == "tenant" and definitely:
            return False
    return True


def could_allow(engine: PolicyEngine, principal: Principal, agent: AgentInfo, tool: str) -> bool:
    """True when some request by ``principal`` for ``tool`` could be allowed (possibly after approval)."""
    plan = engine.bundle.plan(tool)
    for rule in plan.denies:
        if rule.kind == "deny" and not rule.rule.clauses and _subjects_hold(rule, principal, agent, definitely=True):
            return False
    if any(_subjects_hold(rule, principal, agent, definitely=False) for rule in (*plan.allows, *plan.approvals)):
        return True
    return engine.bundle.default is Effect.ALLOW
