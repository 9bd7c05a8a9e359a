"""Synthetic workloads: who sends what to which model, how often, and the serving policy that meets them.

A workload is data (JSON or TOML, or a built-in preset): streams of requests, each stream one tenant's
traffic to one model with an arrival process (Poisson, periodic bursts, or a replayed trace), plus the
batching and admission policy. Arrival times are generated up front with numpy from a seeded RNG, so
the same workload always produces the same simulation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentcore.accel.errors import WorkloadError
from agentcore.accel.sim.profiles import Precision
from agentcore.accel.sim.tomlread import read_toml


class PoissonArrivals(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["poisson"] = "poisson"
    rate: float = Field(gt=0, description="mean requests per second")
    requests: int = Field(gt=0)

    def times(self, rng: np.random.Generator) -> np.ndarray:
        return np.cumsum(rng.exponential(1.0 / self.rate, self.requests))


class BurstArrivals(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["burst"] = "burst"
    size: int = Field(gt=0, description="requests arriving together")
    bursts: int = Field(default=1, gt=0)
    interval_s: float = Field(default=1.0, gt=0, description="seconds between bursts")

    def times(self, rng: np.random.Generator) -> np.ndarray:
        return np.repeat(np.arange(self.bursts, dtype=np.float64) * self.interval_s, self.size)


class TraceArrivals(BaseModel):
    """Replayed arrival times in seconds (need not be sorted): inline, or a file with one time per line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["trace"] = "trace"
    times_s: list[Annotated[float, Field(ge=0)]] = Field(default_factory=list)
    file: Path | None = None

    @model_validator(mode="after")
    def _one_source(self) -> TraceArrivals:
        if bool(self.times_s) == (self.file is not None):
            raise ValueError("a trace needs exactly one of `times_s` (a list) or `file` (one time per line)")
        return self

    def times(self, rng: np.random.Generator) -> np.ndarray:
        if self.file is None:
            values = np.asarray(self.times_s, dtype=np.float64)
        else:
            try:
                values = np.loadtxt(self.file, dtype=np.float64, ndmin=1)
            except (OSError, ValueError) as error:
                message = f"trace file {self.file}: {error}; expected one time in seconds per line"
                raise WorkloadError(message) from error
            if values.size == 0 or (values < 0).any():
                raise WorkloadError(f"trace file {self.file}: needs at least one non-negative time")
        return np.sort(values)


Arrivals = Annotated[PoissonArrivals | BurstArrivals | TraceArrivals, Field(discriminator="kind")]


class Stream(BaseModel):
    """One tenant's requests to one model; higher ``priority`` is served first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    tenant: str = "default"
    priority: int = 0
    seq: int = Field(default=128, ge=1, description="tokens per request (padded to the compiled bucket)")
    start_s: float = Field(default=0.0, ge=0)
    arrivals: Arrivals


class Workload(BaseModel):
    """Streams plus the serving policy: precision, dynamic batching, admission and tenant weights."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "custom"
    description: str = ""
    streams: list[Stream] = Field(min_length=1)
    precision: Precision = "bf16"
    max_batch: int = Field(default=32, ge=1)
    max_delay_ms: float = Field(default=2.0, ge=0)
    max_queue: int = Field(default=100_000, ge=1, description="requests waiting per model before new ones are rejected")
    weights: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict, description="tenant shares")
    seed: int = 0

    @model_validator(mode="after")
    def _queue_holds_a_batch(self) -> Workload:
        if self.max_queue < self.max_batch:
            raise ValueError(f"max_queue ({self.max_queue}) must be at least max_batch ({self.max_batch})")
        return self

    def weight(self, tenant: str) -> float:
        return self.weights.get(tenant, 1.0)

    def arrival_times(self) -> list[np.ndarray]:
        """Sorted arrival times of each stream (seconds), reproducible from ``seed``."""
        rng = np.random.default_rng(self.seed)
        return [stream.start_s + stream.arrivals.times(rng) for stream in self.streams]

    @property
    def requests(self) -> int:
        return sum(len(times) for times in self.arrival_times())


# Sized so that both Trn2 UltraServer (512 cores) and Trn3 Gen2 UltraServer (1,152 cores) run whole rounds
# of batches (4,608 batches = 9 x 512 = 4 x 1,152): the measured throughput ratio has no tail artefact.
_ROUNDS_BATCHES = 4608

PRESETS: dict[str, Workload] = {
    "compute-bound": Workload(
        name="compute-bound",
        description="large fp8 batches of an 8-layer 4096-wide MLP, all queued at t=0: Tensor-engine bound",
        streams=[Stream(model="mlp-4096x8", seq=1, arrivals=BurstArrivals(size=512 * _ROUNDS_BATCHES))],
        precision="fp8",
        max_batch=512,
        max_delay_ms=0.0,
        max_queue=512 * _ROUNDS_BATCHES,
    ),
    "memory-bound": Workload(
        name="memory-bound",
        description="batch-1 bf16 passes of the same MLP (every weight read per request): HBM bandwidth bound",
        streams=[Stream(model="mlp-4096x8", seq=1, arrivals=BurstArrivals(size=_ROUNDS_BATCHES))],
        precision="bf16",
        max_batch=1,
        max_delay_ms=0.0,
        max_queue=_ROUNDS_BATCHES,
    ),
    "embeddings": Workload(
        name="embeddings",
        description="MiniLM sentence embeddings, Poisson 2,000 req/s, 128-token requests, two tenants",
        streams=[
            Stream(model="minilm", tenant="search", arrivals=PoissonArrivals(rate=1500, requests=15_000)),
            Stream(model="minilm", tenant="support", priority=1, arrivals=PoissonArrivals(rate=500, requests=5_000)),
        ],
        weights={"search": 3, "support": 1},
    ),
    "bursty": Workload(
        name="bursty",
        description="bursts of 5,000 MiniLM requests every 100 ms on top of 1,000 req/s background traffic",
        streams=[
            Stream(model="minilm", tenant="batch-jobs", arrivals=BurstArrivals(size=5000, bursts=10, interval_s=0.1)),
            Stream(
                model="minilm", tenant="interactive", priority=1, arrivals=PoissonArrivals(rate=1000, requests=1000)
            ),
        ],
        max_queue=20_000,
    ),
    "scale-1m": Workload(
        name="scale-1m",
        description="1,000,000 MiniLM requests, Poisson 2M req/s (the simulate-only scale target)",
        streams=[Stream(model="minilm", arrivals=PoissonArrivals(rate=2_000_000, requests=1_000_000))],
        max_queue=1_000_000,
    ),
}


def load_workload(name_or_path: str) -> Workload:
    """A preset by name, or a workload file (``.json`` or ``.toml``)."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise WorkloadError(
            f"unknown workload {name_or_path!r}: not a preset ({', '.join(PRESETS)}) and not a .json/.toml file"
        )
    try:
        raw = read_toml(path) if path.suffix == ".toml" else json.loads(path.read_text(encoding="utf-8"))
        return Workload.model_validate(raw)
    except (ValueError, ValidationError) as error:
        raise WorkloadError(f"invalid workload file {path}: {error}") from error
