"""What the LLM calls in traces would cost served on simulated devices: per session, per tenant, in total.

Each model-call span's token usage (``input_tokens`` / ``output_tokens``, read by the importers from GenAI or
OpenInference attributes) is priced with each device's rate card for one catalogue model (cards are best
made at the traces' :func:`mean_call_shape`) (the spans name the
provider's model, which the catalogue may not have, so the model to price with is a stated assumption).
Calls without token counts are counted as unpriced, never guessed. All figures are simulated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from agentcore.accel.serving.catalogue import LLMCatalogue
from agentcore.accel.serving.pricing import DEFAULT_SHAPE, RateCard, rate_cards
from agentcore.accel.sim.profiles import ProfileCatalog
from agentcore.errors import ConfigError
from agentcore.evaluations.trace import Session


class SessionCost(BaseModel):
    model_config = ConfigDict(frozen=True)

    session: str
    tenant: str
    calls: int
    input_tokens: int
    output_tokens: int
    usd: dict[str, float] = Field(description="device -> simulated dollars")
    joules: dict[str, float]


class TraceCost(BaseModel):
    """Priced sessions plus per-tenant and total dollars for each device."""

    model_config = ConfigDict(frozen=True)

    simulated: bool = True
    model: str = Field(description="the catalogue model every call is priced as (an assumption)")
    devices: list[str]
    sessions: list[SessionCost]
    tenants: dict[str, dict[str, float]]
    totals: dict[str, float]
    priced_calls: int
    unpriced_calls: int = Field(description="model calls without token usage")
    input_tokens: int
    output_tokens: int

    def per_session(self, device: str) -> float:
        return self.totals[device] / len(self.sessions) if self.sessions else 0.0


def mean_call_shape(sessions: Sequence[Session], default: tuple[int, int]) -> tuple[int, int]:
    """(input, output) tokens of the sessions' average model call with usage; ``default`` when none has any."""
    calls = [call for session in sessions for call in session.model_calls if call.input_tokens or call.output_tokens]
    if not calls:
        return default
    return (
        max(1, round(sum(call.input_tokens or 0 for call in calls) / len(calls))),
        max(1, round(sum(call.output_tokens or 0 for call in calls) / len(calls))),
    )


def price_sessions(sessions: Sequence[Session], cards: Mapping[str, RateCard]) -> TraceCost:
    """Price every model call of ``sessions`` with each of ``cards`` (device name -> rate card of one model)."""
    models = {card.model for card in cards.values()}
    if len(models) != 1:
        raise ConfigError(f"rate cards must price one model, got {sorted(models)}")
    priced: list[SessionCost] = []
    unpriced = 0
    tenants: dict[str, dict[str, float]] = {}
    for session in sessions:
        calls = [
            call for call in session.model_calls if call.input_tokens is not None or call.output_tokens is not None
        ]
        unpriced += len(session.model_calls) - len(calls)
        tokens_in = sum(call.input_tokens or 0 for call in calls)
        tokens_out = sum(call.output_tokens or 0 for call in calls)
        costs = {device: card.price(tokens_in, tokens_out) for device, card in cards.items()}
        tenant = session.tenant or "default"
        entry = SessionCost(
            session=session.id, tenant=tenant, calls=len(calls), input_tokens=tokens_in, output_tokens=tokens_out,
            usd={device: cost.usd for device, cost in costs.items()},
            joules={device: cost.joules for device, cost in costs.items()},
        )  # fmt: skip
        priced.append(entry)
        bucket = tenants.setdefault(tenant, dict.fromkeys(cards, 0.0))
        for device, usd in entry.usd.items():
            bucket[device] += usd
    return TraceCost(
        model=models.pop(),
        devices=list(cards),
        sessions=priced,
        tenants=tenants,
        totals={device: sum(entry.usd[device] for entry in priced) for device in cards},
        priced_calls=sum(entry.calls for entry in priced),
        unpriced_calls=unpriced,
        input_tokens=sum(entry.input_tokens for entry in priced),
        output_tokens=sum(entry.output_tokens for entry in priced),
    )


def price_traces(
    sessions: Sequence[Session],
    catalogue: LLMCatalogue,
    profiles: ProfileCatalog,
    model: str,
    devices: Sequence[str],
    *,
    precision: str | None = None,
) -> TraceCost:
    """``sessions``' model calls priced as ``model`` on each of ``devices``, with cards made at the traces' mean call
    shape: what ``agentcore accel price-traces`` prints and ``agentcore eval run`` puts in its reports."""
    shape = mean_call_shape(sessions, DEFAULT_SHAPE)
    return price_sessions(sessions, rate_cards(catalogue, profiles, model, devices, precision=precision, shape=shape))
