"""Reproduce the published serving results in the catalogue with the simulator (the validation table).

Throughput points are offline runs: every request queued at t=0 on one replica, as TensorRT-LLM's
``trtllm-bench throughput`` does, with its default limits (2,048 sequences, 8,192 tokens per iteration).
Latency points are one request alone (batch 1), as the Neuron tutorial measures them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentcore.accel.serving.catalogue import LLMCatalogue, PublishedResult
from agentcore.accel.serving.costmodel import Layout, ReplicaCost
from agentcore.accel.serving.simulation import Requests, simulate
from agentcore.accel.sim.profiles import ProfileCatalog
from agentcore.accel.sim.workload import BurstArrivals

OFFLINE_REQUESTS = 2000
OFFLINE_MAX_BATCH = 2048
OFFLINE_CHUNK_TOKENS = 8192


class ValidationRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    source: str
    device: str
    model: str
    precision: str
    tp: int
    shape: str
    metric: str
    published: float
    simulated: float
    error: float  # simulated / published - 1
    fitted: bool
    known_gap: str | None


def reproduce(result: PublishedResult, profiles: ProfileCatalog, llms: LLMCatalogue) -> float:
    """The simulator's value of ``result.metric`` for the published configuration."""
    chip = profiles.chips[result.device]
    offline = result.metric == "output_tps"
    layout = Layout(
        tp=result.tp, pp=result.pp, precision=result.precision,
        max_batch=OFFLINE_MAX_BATCH if offline else 1,
        chunk_tokens=OFFLINE_CHUNK_TOKENS if offline else result.input_tokens,
    )  # fmt: skip
    cost = ReplicaCost(llms.model(result.model), chip, llms.efficiency(chip.key), layout)
    arrivals = BurstArrivals(size=OFFLINE_REQUESTS if offline else 1)
    report = simulate(
        cost, Requests(arrivals=arrivals, input_tokens=result.input_tokens, output_tokens=result.output_tokens)
    )
    if offline:
        return report.output_tokens_per_s
    return report.ttft.p50_ms if result.metric == "ttft_ms" else report.tpot.p50_ms


def validation_table(profiles: ProfileCatalog, llms: LLMCatalogue) -> list[ValidationRow]:
    rows = []
    for result in llms.published.values():
        ours = reproduce(result, profiles, llms)
        rows.append(
            ValidationRow(
                key=result.key, source=llms.sources[result.source].url, device=result.device, model=result.model,
                precision=result.precision, tp=result.tp, shape=f"{result.input_tokens}/{result.output_tokens}",
                metric=result.metric, published=result.value, simulated=ours, error=ours / result.value - 1,
                fitted=result.fitted, known_gap=result.known_gap,
            )
        )  # fmt: skip
    return rows
