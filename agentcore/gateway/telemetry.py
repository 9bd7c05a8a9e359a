"""Optional OpenTelemetry span attributes for decisions (no-op unless a recording span is active)."""

from __future__ import annotations

from typing import Any

from agentcore.policies.model import Decision

_trace: Any
try:
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - opentelemetry-api is optional
    _trace = None


def annotate_span(tool: str, effect: str, decision: Decision) -> None:
    """Put the decision on the caller's current span, named like AgentCore's ``aws.agentcore.policy.*``."""
    if _trace is None:
        return
    span: Any = _trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attributes(
        {
            "agentcore.gateway.tool": tool,
            "agentcore.policy.decision": effect,
            "agentcore.policy.determining_rules": [r.rule_id for r in decision.reasons],
            "agentcore.policy.bundle_hash": decision.bundle_hash,
        }
    )
