"""The ledger's recorded work replayed on other devices: what the same calls would have cost on Trn2, on Trn3, ...

A receipt keeps the work it paid for, not only the price: the model and variant, items, batches and tokens of an
encoder or head call, the prompt and completion tokens of an LLM call. Replaying prices that same work on each
device with the same cost models that priced it (accel.sim's graph cost model for ONNX calls, accel.serving's
rate card for LLM calls), so the devices are compared on identical work, not per item of whatever each served.
The ledger keeps no per-batch sequence lengths, so an ONNX call's batches are rebuilt as even splits of its items
at its mean tokens per item, on every device alike; queueing is not replayed (service time only). Calls whose
model cannot be found (an ONNX file no longer here, an LLM the catalogue lacks) are counted by reason, never
guessed. Every figure is simulated.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select

from agentcore.accel.ledger import Ledger, ReceiptRow, Spend
from agentcore.accel.metering import VARIANT_PRECISION
from agentcore.accel.models.registry import list_built
from agentcore.accel.serving.usage import shipped_card
from agentcore.accel.sim.device import SimulatedDevice
from agentcore.accel.sim.models import SimModel, model_from_file
from agentcore.errors import AgentCoreError

DEFAULT_DEVICES = ("trn2", "trn3")
Resolve = Callable[[str, str], SimModel | None]  # (model, variant) -> the graph to cost, or None when not found


class Replay(BaseModel):
    """The same recorded work priced on each device: in total, per tenant and per kind of call (all simulated)."""

    model_config = ConfigDict(frozen=True)

    simulated: bool = True
    devices: list[str]
    recorded: Spend = Field(description="what the ledger charged, each call on the profile it ran on")
    totals: dict[str, Spend]
    tenants: dict[str, dict[str, Spend]] = Field(description="tenant -> device -> spend")
    kinds: dict[str, dict[str, Spend]] = Field(description="embedding, llm, ... -> device -> spend")
    skipped: dict[str, int] = Field(description="why -> calls not replayed")


def onnx_resolver(folders: Iterable[Path] = ()) -> Resolve:
    """Models by the names receipts carry: the built encoders (``list_built``), then ``<name>.onnx`` in ``folders``
    (e.g. the evaluations' task heads). Nothing is built or downloaded."""
    built = {model.name: model for model in list_built()}
    files = {path.stem: path for folder in folders for path in sorted(Path(folder).glob("*.onnx"))}

    def resolve(name: str, variant: str) -> SimModel | None:
        encoder = built.get(name)
        path = encoder.path(variant) if encoder is not None else files.get(name)
        return model_from_file(path, name) if path is not None and path.is_file() else None

    return resolve


@lru_cache(maxsize=32)
def _device(name: str) -> SimulatedDevice:
    return SimulatedDevice(name)  # its service tables are kept, so a page reload costs lookups only


def _batches(items: int, batches: int, tokens: int) -> list[tuple[int, int]]:
    """``batches`` even splits of ``items`` at the call's mean tokens per item (1 for inputs without tokens)."""
    count = min(batches, items)
    seq = max(1, round(tokens / items))
    return [(items // count + (1 if index < items % count else 0), seq) for index in range(count)]


def _onnx_cost(device: SimulatedDevice, model: SimModel, variant: str, shape: tuple[int, int, int]) -> Spend:
    precision = VARIANT_PRECISION.get(variant, "fp32")
    seconds = sum(device.batch_seconds(model, size, seq, precision) for size, seq in _batches(*shape))
    usd, joules = device.spend(seconds)
    return Spend(usd=usd, joules=joules, device_seconds=seconds, calls=1, items=shape[0])


def _llm_cost(model: str, device: SimulatedDevice, input_tokens: int, output_tokens: int) -> Spend:
    """An LLM call priced on the device's chip (a system serves it on its chips)."""
    cost = shipped_card(model, device.profile.chip.key).price(input_tokens, output_tokens)
    return Spend(usd=cost.usd, joules=cost.joules, device_seconds=cost.chip_seconds, calls=1, items=1)


_FIELDS = ("usd", "joules", "device_seconds", "calls", "items")


def _add(into: dict[str, float], spend: Spend, calls: int) -> None:
    """``calls`` calls like one costing ``spend``, summed into ``into``."""
    for name in _FIELDS:
        into[name] += getattr(spend, name) * calls


def _spend(sums: dict[str, float]) -> Spend:
    return Spend(
        usd=sums["usd"], joules=sums["joules"], device_seconds=sums["device_seconds"], calls=int(sums["calls"]),
        items=int(sums["items"]),
    )  # fmt: skip


def _empty() -> dict[str, float]:
    return dict.fromkeys(_FIELDS, 0.0)


def replay(
    ledger: Ledger,
    devices: Sequence[str] = DEFAULT_DEVICES,
    resolve: Resolve | None = None,
    *,
    tenant: str | None = None,
) -> Replay:
    """Every call the ledger recorded (rejected ones never ran: left out), or ``tenant``'s only, priced on each of
    ``devices``; an unknown device raises :class:`~agentcore.accel.errors.ProfileError`."""
    resolve = resolve or onnx_resolver()
    simulated = {name: _device(name) for name in devices}
    work: tuple[Any, ...] = (
        ReceiptRow.tenant, ReceiptRow.kind, ReceiptRow.model, ReceiptRow.variant, ReceiptRow.items,
        ReceiptRow.batches, ReceiptRow.tokens, ReceiptRow.input_tokens, ReceiptRow.output_tokens,
    )  # fmt: skip
    sums: tuple[Any, ...] = (
        func.count(),
        func.sum(ReceiptRow.usd),
        func.sum(ReceiptRow.joules),
        func.sum(ReceiptRow.device_seconds),
    )
    ran: list[Any] = [ReceiptRow.rejected.is_(False)]  # type: ignore[attr-defined]
    if tenant is not None:
        ran.append(ReceiptRow.tenant == tenant)
    query = select(*work, *sums).where(*ran).group_by(*work)
    ledger.flush()
    with ledger.engine.connect() as connection:
        groups = connection.execute(query).all()
    recorded, totals = _empty(), defaultdict[str, dict[str, float]](_empty)
    tenants: defaultdict[str, defaultdict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(_empty))
    kinds: defaultdict[str, defaultdict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(_empty))
    skipped: defaultdict[str, int] = defaultdict(int)
    for tenant, kind, model, variant, items, batches, tokens, tokens_in, tokens_out, calls, *spent in groups:
        llm = kind == "llm"
        if not llm and (items < 1 or batches < 1):
            continue  # nothing ran
        for name, value in zip(_FIELDS, (*spent, calls, items * calls), strict=True):
            recorded[name] += value
        graph = None if llm else resolve(model, variant)
        if not llm and graph is None:
            skipped[f"{model} ({variant}): no ONNX file for it here"] += calls
            continue
        try:
            costs = {
                name: _llm_cost(model, device, tokens_in, tokens_out)
                if graph is None
                else _onnx_cost(device, graph, variant, (items, batches, tokens))
                for name, device in simulated.items()
            }
        except AgentCoreError as error:  # an LLM the catalogue lacks, a graph that cannot be costed
            skipped[f"{model}: {error}"] += calls
            continue
        for name, spend in costs.items():
            for bucket in (totals[name], tenants[tenant][name], kinds[kind][name]):
                _add(bucket, spend, calls)
    return Replay(
        devices=list(devices),
        recorded=_spend(recorded),
        totals={device: _spend(totals[device]) for device in devices},
        tenants={t: {d: _spend(per[d]) for d in devices} for t, per in sorted(tenants.items())},
        kinds={k: {d: _spend(per[d]) for d in devices} for k, per in sorted(kinds.items())},
        skipped=dict(skipped),
    )
