"""Rate cards: simulated dollars, joules and chip-seconds per input and output token of a model on a device.

A rate card prices a replica at saturation for one request shape: the replica's batch is as large as
``max_batch`` and its KV capacity allow, a prefill token costs one token's share of a full prefill chunk,
and an output token one sequence's share of a full decode iteration at the shape's mean context. Dollars
and joules scale with the chip-seconds so spent. The default layout is the smallest power-of-two tensor
degree whose weights take at most half the usable memory, at FP8 where the chip has it (else BF16).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from agentcore.accel.errors import ProfileError
from agentcore.accel.serving.catalogue import Architecture, LLMCatalogue
from agentcore.accel.serving.costmodel import WEIGHT_BYTES, Layout, ReplicaCost
from agentcore.accel.sim.profiles import ChipSpec, ProfileCatalog

DEFAULT_SHAPE = (2000, 300)  # input, output tokens of a typical agent turn (history included)


class TokenCost(BaseModel):
    model_config = ConfigDict(frozen=True)

    usd: float
    joules: float
    chip_seconds: float


class RateCard(BaseModel):
    """Per-token prices of ``model`` on ``device`` (simulated), for requests shaped like ``shape``."""

    model_config = ConfigDict(frozen=True)

    simulated: bool = True
    projected: bool = Field(description="the chip is a projection (Trainium4), not a published part")
    model: str
    device: str
    layout: Layout
    shape: tuple[int, int]
    batch: int
    usd_per_million_input: float
    usd_per_million_output: float
    joules_per_input_token: float
    joules_per_output_token: float
    chip_seconds_per_input_token: float
    chip_seconds_per_output_token: float

    def price(self, input_tokens: int, output_tokens: int) -> TokenCost:
        return TokenCost(
            usd=(input_tokens * self.usd_per_million_input + output_tokens * self.usd_per_million_output) / 1e6,
            joules=input_tokens * self.joules_per_input_token + output_tokens * self.joules_per_output_token,
            chip_seconds=input_tokens * self.chip_seconds_per_input_token
            + output_tokens * self.chip_seconds_per_output_token,
        )


def default_layout(model: Architecture, chip: ChipSpec, precision: str | None = None) -> Layout:
    """Smallest power-of-two TP (within the chip-to-chip domain) whose weights fill at most half the memory."""
    if precision is None:
        precision = "fp8" if chip.fp8_tflops.value > chip.bf16_tflops.value else "bf16"
    chip.tflops(precision)  # a precision the chip lacks is an error naming those it has
    weights = model.total_params * WEIGHT_BYTES[precision]
    domain = int(chip.scaleup_chips.value) if chip.scaleup_chips else 1
    tp = 1
    while tp < domain and weights > 0.5 * tp * chip.hbm_gib.value * 2**30:
        tp *= 2
    pp = 1
    while weights > 0.5 * tp * pp * chip.hbm_gib.value * 2**30:
        pp *= 2
    return Layout(tp=min(tp, domain), pp=pp, precision=precision)


def rate_card(cost: ReplicaCost, shape: tuple[int, int] = DEFAULT_SHAPE) -> RateCard:
    """Saturated per-token prices of ``cost``'s replica for requests of ``shape`` (input, output tokens)."""
    input_tokens, output_tokens = shape
    if input_tokens < 1 or output_tokens < 1:
        raise ProfileError(f"a request shape needs at least one input and one output token, got {shape}")
    layout = cost.layout
    batch = max(1, min(layout.max_batch, cost.kv_capacity_tokens // (input_tokens + output_tokens)))
    chunk = layout.chunk_tokens
    prefill_keys = chunk * (input_tokens / 2)  # a chunk's queries attend half the prompt on average
    prefill = cost.step_seconds(chunk, prefill_keys) / chunk
    context = input_tokens + output_tokens / 2
    decode = cost.step_seconds(batch, batch * context) / batch
    chips = layout.chips
    usd_per_chip_second = cost.usd_per_second / chips
    watts_per_chip = cost.watts / chips
    return RateCard(
        projected=cost.chip.projected,
        model=cost.model.key,
        device=cost.chip.key,
        layout=layout,
        shape=shape,
        batch=batch,
        usd_per_million_input=prefill * chips * usd_per_chip_second * 1e6,
        usd_per_million_output=decode * chips * usd_per_chip_second * 1e6,
        joules_per_input_token=prefill * chips * watts_per_chip,
        joules_per_output_token=decode * chips * watts_per_chip,
        chip_seconds_per_input_token=prefill * chips,
        chip_seconds_per_output_token=decode * chips,
    )


def card_for(
    catalogue: LLMCatalogue,
    chip: ChipSpec,
    model: str,
    *,
    precision: str | None = None,
    shape: tuple[int, int] = DEFAULT_SHAPE,
) -> RateCard:
    """The rate card of ``model`` on ``chip`` at its default layout."""
    architecture = catalogue.model(model)
    layout = default_layout(architecture, chip, precision)
    return rate_card(ReplicaCost(architecture, chip, catalogue.efficiency(chip.key), layout), shape)


def rate_cards(
    catalogue: LLMCatalogue,
    profiles: ProfileCatalog,
    model: str,
    devices: Sequence[str],
    *,
    precision: str | None = None,
    shape: tuple[int, int] = DEFAULT_SHAPE,
) -> dict[str, RateCard]:
    """``model``'s card on each of ``devices`` (chips or systems; a system is priced as its chip), by device name."""
    return {
        device: card_for(catalogue, profiles.profile(device).chip, model, precision=precision, shape=shape)
        for device in devices
    }
