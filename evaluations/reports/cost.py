"""What the Markdown and HTML reports say about a run's time and its traces' simulated LLM spend, in one place."""

from __future__ import annotations

from agentcore.evaluations.llm_cost import TraceCost
from agentcore.evaluations.outcome import Outcome


def ran(outcome: Outcome) -> str:
    """The run's start and duration as a sentence ("Ran 2026-12-01 15:16:23Z for 12.3 s. "); empty when untimed."""
    timing = outcome.timing
    if timing is None:
        return ""
    return f"Ran {timing.started_at:%Y-%m-%d %H:%M:%S}Z for {timing.duration_s:.1f} s. "


def usd(value: float) -> str:
    return f"${value:.6f}"


def cost_note(cost: TraceCost) -> str:
    """The sentence under the cost table: what was priced, as what, and what was not."""
    return (
        f"Simulated (accel's serving model, not measured): {cost.priced_calls} LLM calls with "
        f"{cost.input_tokens:,} input / {cost.output_tokens:,} output tokens, each priced as {cost.model}; "
        f"{cost.unpriced_calls} calls without token usage left unpriced."
    )


def cost_rows(cost: TraceCost) -> list[tuple[str, list[str]]]:
    """(row label, one cell per device): each tenant, the total and the mean per session."""
    rows = [(tenant, [usd(spend[device]) for device in cost.devices]) for tenant, spend in sorted(cost.tenants.items())]
    rows.append(("total", [usd(cost.totals[device]) for device in cost.devices]))
    rows.append(("per session", [usd(cost.per_session(device)) for device in cost.devices]))
    return rows
