"""LLM token usage as ledger receipts: the calls an agent makes to a model, priced by the serving model.

A receipt of kind ``llm`` carries the prompt and completion tokens and the simulated dollars, joules and
chip-seconds of serving them on a device (its rate card), so budget rules' ``accelerator spend`` and the
ledger's reports count LLM spend beside the library's own encoder calls.
"""

from __future__ import annotations

from functools import lru_cache

from agentcore.accel.errors import ProfileError
from agentcore.accel.ledger import Ledger
from agentcore.accel.runtime import Receipt
from agentcore.accel.serving.catalogue import LLMCatalogue, load_llms
from agentcore.accel.serving.pricing import RateCard, card_for
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog

DEFAULT_DEVICE = "trn3"
# What an LLM outside the catalogue (gpt-4o, claude-...) is priced as, as in `agentcore accel price-traces`.
STAND_IN_LLM = "llama-3.1-70b"


@lru_cache(maxsize=1)
def shipped_catalogues() -> tuple[ProfileCatalog, LLMCatalogue]:
    """The built-in device profiles and LLM catalogue (read once per process)."""
    return load_catalog(), load_llms()


@lru_cache(maxsize=256)
def shipped_card(model: str, device: str) -> RateCard:
    """``model``'s rate card on the shipped chip ``device`` at the default request shape (cached)."""
    profiles, llms = shipped_catalogues()
    chip = profiles.chips.get(device)
    if chip is None:
        raise ProfileError(f"unknown chip {device!r} for LLM pricing; known: {', '.join(profiles.chips)}")
    return card_for(llms, chip, model)


def catalogue_llm(name: str | None) -> str:
    """``name`` when the shipped catalogue has it, else the stand-in: an SDK's model names a hosted model the
    serving simulation has no architecture for."""
    return name if name is not None and name in shipped_catalogues()[1].models else STAND_IN_LLM


def llm_receipt(
    card: RateCard, input_tokens: int, output_tokens: int, *, tenant: str, agent: str | None, user: str | None
) -> Receipt:
    """A ledger receipt for one LLM call priced with ``card``."""
    if input_tokens < 0 or output_tokens < 0:
        raise ProfileError(f"token counts must be non-negative, got {input_tokens} in / {output_tokens} out")
    cost = card.price(input_tokens, output_tokens)
    layout = card.layout
    return Receipt(
        model=card.model,
        variant=f"{layout.precision}-tp{layout.tp}-pp{layout.pp}",
        kind="llm",
        tenant=tenant,
        agent=agent,
        user=user,
        items=1,
        batches=1,
        tokens=input_tokens + output_tokens,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cpu_seconds=0.0,
        device_seconds=cost.chip_seconds,
        usd=cost.usd,
        joules=cost.joules,
        profile=card.device,
    )


def record_llm_usage(
    ledger: Ledger,
    model: str,
    input_tokens: int,
    output_tokens: int,
    *,
    device: str = DEFAULT_DEVICE,
    tenant: str = "default",
    agent: str | None = None,
    user: str | None = None,
) -> Receipt:
    """Price one LLM call of ``model`` served on ``device`` and record it in ``ledger``; returns the receipt."""
    card = shipped_card(model, device)
    receipt = llm_receipt(card, input_tokens, output_tokens, tenant=tenant, agent=agent, user=user)
    ledger.record(receipt)
    return receipt
