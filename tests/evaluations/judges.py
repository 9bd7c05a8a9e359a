"""An application-supplied judge used by the suite tests (stands in for e.g. an LLM call)."""

from __future__ import annotations

from agentcore.evaluations import Target


def mentions_refund(target: Target) -> tuple[float, str]:
    said = target.turn.output.lower()
    return (1.0, "mentions the refund") if "refund" in said else (0.0, "no refund mentioned")
