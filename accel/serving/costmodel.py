"""Analytical cost of one continuous-batching iteration of an LLM replica (simulated, not measured).

One iteration runs every decoding sequence one token forward plus up to a chunk of prefill tokens
(chunked prefill, Sarathi-Serve style). Its time is a roofline with named efficiencies:

* compute: ``tokens x 2 x active params`` plus attention ``4 x heads x head_dim x keys`` per query token,
  at the chip's dense peak for the precision (a precision the chip lacks is an error naming those it has);
* memory: the weights read once per iteration (MoE: only the experts the batch routes to, in expectation),
  the KV cache of every attended key, and the new tokens' KV written;
* tensor parallelism over ``tp`` chips: two ring all-reduces of the activations per layer over the
  chip-to-chip links (bandwidth and per-step latency from the device profile);
* pipeline parallelism over ``pp`` stages with ``pp`` micro-batches: compute and KV reads spread over the
  stages, every stage still reads its weights once per micro-batch, and each step pays ``pp - 1`` hops
  (over the links inside the scale-up domain, over the network outside it);
* a fixed per-iteration overhead.
"""

from __future__ import annotations

from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field

from agentcore.accel.errors import ProfileError
from agentcore.accel.serving.catalogue import Architecture, Efficiency
from agentcore.accel.sim.profiles import ChipSpec

# Bytes per weight element; MXFP4 adds one 8-bit scale per 32-element block (4.25 bits).
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 4.25 / 8}
ACTIVATION_BYTES = 2.0  # activations travel between chips in BF16


def _figure(chip: ChipSpec, name: str, *, needed: bool) -> float:
    """An optional chip figure the layout needs; a profile without it is an error naming the figure."""
    figure = getattr(chip, name)
    if figure is None:
        if needed:
            raise ProfileError(f"{chip.name} has no {name!r} figure, which this layout needs; add it to the profile")
        return 0.0
    return float(figure.value)


class Layout(BaseModel):
    """How one replica is laid out: tensor- and pipeline-parallel degrees (in chips) and precision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    precision: str = "fp8"
    max_batch: int = Field(default=256, ge=1, description="most sequences decoding at once")
    chunk_tokens: int = Field(default=2048, ge=1, description="token budget of one iteration (chunked prefill)")

    @property
    def chips(self) -> int:
        return self.tp * self.pp

    @property
    def kv_precision(self) -> str:
        """FP8 KV cache with FP8/FP4 weights (TensorRT-LLM's and NxD's FP8 recipes), else BF16."""
        return "bf16" if self.precision == "bf16" else "fp8"


class ReplicaCost:
    """Iteration timing, KV capacity and energy of one replica of ``model`` on ``chip`` x ``layout.chips``."""

    def __init__(self, model: Architecture, chip: ChipSpec, efficiency: Efficiency, layout: Layout) -> None:
        if layout.precision not in WEIGHT_BYTES:
            raise ProfileError(f"unknown serving precision {layout.precision!r}; choose bf16, fp8 or fp4")
        self.model, self.chip, self.efficiency, self.layout = model, chip, efficiency, layout
        tp, pp = layout.tp, layout.pp
        domain = int(chip.scaleup_chips.value) if chip.scaleup_chips else 1
        if tp > domain:
            raise ProfileError(f"tp={tp} exceeds {chip.name}'s chip-to-chip domain of {domain} chips; use pp")
        if pp > model.layers:
            raise ProfileError(f"pp={pp} exceeds {model.name}'s {model.layers} layers")
        self.peak = tp * chip.tflops(layout.precision) * 1e12 * efficiency.compute_efficiency.value
        self.bandwidth = tp * chip.hbm_tbps.value * 1e12 * efficiency.memory_efficiency.value
        self.weight_element = WEIGHT_BYTES[layout.precision]
        self.kv_per_token = model.kv_bytes_per_token(WEIGHT_BYTES[layout.kv_precision])
        self.overhead = efficiency.step_overhead_ms.value / 1000
        latency = _figure(chip, "link_latency_us", needed=tp > 1 or pp > 1) / 1e6
        link = chip.link_gbps.value * 1e9 * efficiency.link_efficiency.value
        message = model.hidden * ACTIVATION_BYTES
        # two ring all-reduces per layer: 2(t-1) latency steps each, 2(t-1)/t of the message over the links
        self.collective_fixed = 0.0 if tp == 1 else 2 * model.layers * 2 * (tp - 1) * latency
        self.collective_per_token = 0.0 if tp == 1 else 2 * model.layers * (2 * (tp - 1) / tp) * message / link / pp
        across = layout.chips > domain
        hop_bandwidth = _figure(chip, "network_gbps", needed=across) * 1e9 if across else link
        self.hop_fixed = (pp - 1) * latency
        self.hop_per_token = (pp - 1) * message / hop_bandwidth / pp

    @cached_property
    def weight_bytes(self) -> float:
        return self.model.total_params * self.weight_element

    @cached_property
    def kv_capacity_tokens(self) -> int:
        """KV-cache tokens that fit beside the weights in the replica's HBM share."""
        usable = self.layout.chips * self.chip.hbm_gib.value * 2**30 * self.efficiency.memory_fraction.value
        free = usable - self.weight_bytes
        if free <= 0:
            raise ProfileError(
                f"{self.model.name} at {self.layout.precision} needs {self.weight_bytes / 2**30:,.0f} GiB of weights; "
                f"{self.layout.chips} x {self.chip.name} hold {usable / 2**30:,.0f} GiB usable: raise tp/pp"
            )
        return int(free / self.kv_per_token)

    def streamed_weight_bytes(self, tokens: int) -> float:
        """Weights read by one iteration of ``tokens`` tokens; MoE reads only the experts routed to."""
        model = self.model
        if not model.moe:
            return (model.total_params - model.embedding_params) * self.weight_element
        touched = model.experts * (1 - (1 - model.active_experts / model.experts) ** tokens)
        dense = model.layers * (model.attention_params + model.hidden * model.experts) + model.lm_head_params
        return (dense + model.layers * touched * model.expert_params) * self.weight_element

    def step_seconds(self, tokens: int, keys: float) -> float:
        """One iteration: ``tokens`` new tokens (decode + prefill) attending ``keys`` cached+new keys in total."""
        if tokens <= 0:
            return 0.0
        weights, per_token_compute, per_key_compute, per_key_memory, fixed, per_token = self.iteration_constants
        if weights < 0:
            weights = self.weight_seconds(tokens)
        compute = tokens * per_token_compute + keys * per_key_compute
        memory = weights + (keys + tokens) * per_key_memory
        return (compute if compute > memory else memory) + fixed + tokens * per_token

    def weight_seconds(self, tokens: int) -> float:
        """Time to read the weights an iteration of ``tokens`` tokens touches (a constant unless MoE)."""
        dense = self.iteration_constants[0]
        return dense if dense >= 0 else self.streamed_weight_bytes(tokens) / self.bandwidth

    @cached_property
    def iteration_constants(self) -> tuple[float, float, float, float, float, float]:
        """The iteration formula's coefficients, folded once into seconds so the simulation can inline it:
        (dense weight-read seconds or -1 for MoE, compute seconds per token, compute seconds per key, memory
        seconds per key or new token, fixed seconds, link seconds per token)."""
        model, pp = self.model, self.layout.pp
        per_flop = 1 / (pp * self.peak)
        return (
            -1.0 if model.moe else self.streamed_weight_bytes(1) / self.bandwidth,
            (model.linear_flops_per_token + model.window_flops_per_token) * per_flop,
            model.attention_flops_coefficient * per_flop,
            self.kv_per_token / pp / self.bandwidth,
            self.collective_fixed + self.hop_fixed + self.overhead,
            self.collective_per_token + self.hop_per_token,
        )

    @property
    def watts(self) -> float:
        """Power of the replica while it serves (every chip busy)."""
        return self.layout.chips * self.chip.power_watts.value

    @property
    def usd_per_second(self) -> float:
        return self.layout.chips * self.chip.usd_per_chip_hour.value / 3600
