"""Time of one batch on one NeuronCore: a roofline per node, summed, plus overheads.

``node time = max(FLOPs / (engine peak x compute_efficiency), bytes / (HBM bandwidth x memory_efficiency))``.
Per-node FLOPs and bytes are affine in the batch size for batch-leading graphs, so two graph walks
(batch 1 and 2) give the service time of every batch size at once; the simulator's hot path is then a
table lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentcore.accel.sim.cost import GraphCost
from agentcore.accel.sim.profiles import DeviceProfile


class CostParameters(BaseModel):
    """The named knobs of the roofline. Defaults and their reasons:

    - ``compute_efficiency`` 0.7: llm-analysis's guidance, "up to 0.7" of peak FLOPs for inference.
    - ``memory_efficiency`` 0.9: llm-analysis's "aggressive" memory-bandwidth efficiency.
    - ``node_overhead_s`` 1e-7: the NKI guide's ~100-cycle static overhead per instruction at ~1 GHz.
    - ``launch_overhead_s`` 2e-5: assumption; AWS publishes no per-execution launch cost.
    - ``seq_buckets``: Neuron compiles fixed shapes, so requests are padded to the next bucket.
    (Sources: https://github.com/cli99/llm-analysis and the NKI architecture guide, research notes §1.2, §3.)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute_efficiency: float = Field(default=0.7, gt=0, le=1)
    memory_efficiency: float = Field(default=0.9, gt=0, le=1)
    node_overhead_s: float = Field(default=1e-7, ge=0)
    launch_overhead_s: float = Field(default=2e-5, ge=0)
    seq_buckets: tuple[int, ...] = (16, 32, 64, 128, 256, 512)

    def bucket(self, seq: int) -> int:
        """The compiled sequence length a request of ``seq`` tokens is padded to."""
        for size in self.seq_buckets:
            if seq <= size:
                return size
        return -(-seq // 128) * 128


def _engine_peaks(cost: GraphCost, profile: DeviceProfile, params: CostParameters) -> np.ndarray:
    tensor = profile.core_flops(cost.precision) * params.compute_efficiency
    vector = profile.core_vector_flops * params.compute_efficiency
    peaks = {"tensor": tensor, "vector": vector, "dma": np.inf}
    return np.array([peaks[node.engine] for node in cost.nodes])


def _node_seconds(
    flops: np.ndarray, moved: np.ndarray, peaks: np.ndarray, profile: DeviceProfile, params: CostParameters
) -> np.ndarray:
    """Roofline time of each node (rows); columns, when present, are batch sizes."""
    bandwidth = profile.core_bandwidth * params.memory_efficiency
    return np.maximum(flops / peaks, moved / bandwidth) + params.node_overhead_s


def batch_seconds(cost: GraphCost, profile: DeviceProfile, params: CostParameters) -> float:
    """Simulated device time of one execution of ``cost`` on one core of ``profile``."""
    flops = np.array([node.flops for node in cost.nodes])
    moved = np.array([node.bytes for node in cost.nodes])
    per_node = _node_seconds(flops, moved, _engine_peaks(cost, profile, params), profile, params)
    return float(per_node.sum()) + params.launch_overhead_s


@dataclass(frozen=True)
class ServiceTable:
    """Device seconds and memory of a batch of each size 1..max_batch (index 0 unused) for one shape."""

    seconds: np.ndarray
    memory_bytes: np.ndarray  # weights + peak activations
    flops: np.ndarray

    @property
    def max_batch(self) -> int:
        return len(self.seconds) - 1


def service_table(
    one: GraphCost, two: GraphCost, max_batch: int, profile: DeviceProfile, params: CostParameters
) -> ServiceTable:
    """Extend costs measured at batch 1 and 2 to every batch size (exact for batch-affine graphs)."""
    sizes = np.arange(max_batch + 1, dtype=np.float64)
    f1 = np.array([node.flops for node in one.nodes])[:, None]
    b1 = np.array([node.bytes for node in one.nodes])[:, None]
    f2 = np.array([node.flops for node in two.nodes])[:, None]
    b2 = np.array([node.bytes for node in two.nodes])[:, None]
    flops = f1 + (f2 - f1) * (sizes - 1)
    moved = b1 + (b2 - b1) * (sizes - 1)
    peaks = _engine_peaks(one, profile, params)[:, None]
    seconds = _node_seconds(flops, moved, peaks, profile, params).sum(axis=0) + params.launch_overhead_s
    seconds[0] = 0.0
    activations = one.peak_activation_bytes + (two.peak_activation_bytes - one.peak_activation_bytes) * (sizes - 1)
    return ServiceTable(seconds=seconds, memory_bytes=one.weight_bytes + activations, flops=flops.sum(axis=0))
