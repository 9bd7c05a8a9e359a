"""Per-node FLOPs and bytes of an ONNX graph at concrete shapes: the work a NeuronCore would do.

Engines follow the NeuronCore layout (research notes §1.2, §4.1): matrix products go to the Tensor
engine, element-wise maths and reductions to the Vector/Scalar engines, pure data movement to DMA.
Nodes whose inputs are all compile-time constants (shape arithmetic) are folded away, as a compiler
for static shapes would. Float tensors are counted at the simulated precision's element size; integer
tensors keep their own. Every node's bytes are its inputs read plus its outputs written (no fusion:
an upper bound on traffic). Ops without a formula get that bytes-only estimate and are listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentcore.accel.errors import CostModelError
from agentcore.accel.sim.graph import ELEMENT_BYTES, FLOAT_TYPES, GraphSkeleton, Node, TensorInfo

Engine = Literal["tensor", "vector", "dma"]
PRECISION_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp8": 1.0, "fp4": 0.5}

# FLOPs per output element of element-wise ops (one per arithmetic step).
_ELEMENTWISE = {
    "Add": 1, "Sub": 1, "Mul": 1, "Div": 1, "Max": 1, "Min": 1, "Neg": 1, "Abs": 1, "Relu": 1, "Sqrt": 1,
    "Pow": 1, "Exp": 1, "Log": 1, "Erf": 1, "Tanh": 1, "Sigmoid": 1, "Where": 1, "Equal": 1, "Less": 1,
    "Greater": 1, "Not": 1, "Reciprocal": 1, "Clip": 2, "Gelu": 8, "QuantizeLinear": 3, "DequantizeLinear": 2,
}  # fmt: skip
# FLOPs per *input* element of row-wise ops: Softmax = max, subtract, exp, sum, divide; LayerNorm = mean,
# subtract, square, sum, normalise, scale, shift; DynamicQuantizeLinear = min, max, scale, round, clip.
_ROWWISE = {"Softmax": 5, "LayerNormalization": 7, "DynamicQuantizeLinear": 5, "ReduceSum": 1, "ReduceMean": 1,
            "ReduceMax": 1, "ReduceMin": 1, "ReduceL2": 2, "ReduceSumSquare": 2}  # fmt: skip
# Views change metadata only: no data moves. Copies read and write their output once.
_VIEWS = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Shape", "Constant", "Size"}
_COPIES = {"Transpose", "Concat", "Slice", "Expand", "Gather", "Split", "Tile", "Pad", "Cast"}
_MATMULS = {"MatMul", "MatMulInteger", "Gemm", "QLinearMatMul"}
_CONSTANT_PRODUCERS = {"Shape", "Constant", "Size"}


class NodeCost(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    op: str
    engine: Engine
    flops: float
    bytes: float


class GraphCost(BaseModel):
    """The work of one execution of a graph at fixed shapes and precision."""

    model_config = ConfigDict(frozen=True)

    model: str
    shapes: dict[str, tuple[int, ...]]
    precision: str
    nodes: list[NodeCost]
    unknown_ops: list[str]
    folded_nodes: int
    weight_bytes: float
    peak_activation_bytes: float

    @property
    def flops(self) -> float:
        return sum(node.flops for node in self.nodes)

    @property
    def bytes(self) -> float:
        return sum(node.bytes for node in self.nodes)

    def flops_on(self, engine: Engine) -> float:
        return sum(node.flops for node in self.nodes if node.engine == engine)


def _matmul_flops(node: Node, ins: Sequence[TensorInfo], outs: Sequence[TensorInfo]) -> float:
    """2·K per output element (K = reduced dimension); Gemm adds one per element for the bias."""
    a = ins[0].shape
    if node.op == "Gemm":
        k = a[0] if node.attributes.get("transA") else a[-1]
        return outs[0].elements * (2 * k + (1 if len(ins) > 2 else 0))
    return outs[0].elements * 2 * a[-1]  # MatMul, MatMulInteger, QLinearMatMul: A is the first input


def _formula(node: Node, ins: Sequence[TensorInfo], outs: Sequence[TensorInfo]) -> tuple[Engine, float] | None:
    if node.op in _MATMULS:
        return "tensor", float(_matmul_flops(node, ins, outs))
    if node.op in _ELEMENTWISE:
        return "vector", float(_ELEMENTWISE[node.op] * outs[0].elements)
    if node.op in _ROWWISE:
        return "vector", float(_ROWWISE[node.op] * ins[0].elements)
    if node.op in _VIEWS or node.op in _COPIES:
        return "dma", 0.0
    return None


def _tensor_bytes(info: TensorInfo, element_bytes: float) -> float:
    if info.dtype in FLOAT_TYPES:
        return info.elements * element_bytes
    return info.elements * ELEMENT_BYTES.get(info.dtype, 4)


def _moved(node: Node, ins: Sequence[TensorInfo], outs: Sequence[TensorInfo], element_bytes: float) -> float:
    """Bytes read plus written. Copies touch only what they output (a Gather reads its rows, not the table)."""
    written = sum(_tensor_bytes(t, element_bytes) for t in outs)
    if node.op in _VIEWS:
        return 0.0
    if node.op in _COPIES:
        indices = sum(_tensor_bytes(t, element_bytes) for t in ins[1:] if t.dtype not in FLOAT_TYPES)
        return 2 * written + (indices if node.op == "Gather" else 0.0)
    return sum(_tensor_bytes(t, element_bytes) for t in ins) + written


def _folded(skeleton: GraphSkeleton) -> set[str]:
    """Names of nodes computable at compile time: every input is a weight or another folded output."""
    static = set(skeleton.weights)
    folded: set[str] = set()
    for node in skeleton.nodes:
        if node.op in _CONSTANT_PRODUCERS or all(name in static or not name for name in node.inputs):
            folded.add(node.name)
            static.update(node.outputs)
    return folded


def _peak_activation(skeleton: GraphSkeleton, live_sizes: Mapping[str, float], folded: set[str]) -> float:
    """Largest sum of live intermediate tensors, walking nodes in order (freed after their last reader)."""
    last_use: dict[str, int] = {}
    for index, node in enumerate(skeleton.nodes):
        for name in node.inputs:
            last_use[name] = index
    live = {name: live_sizes[name] for name in skeleton.input_names if name in live_sizes}
    peak = sum(live.values())
    for index, node in enumerate(skeleton.nodes):
        if node.name in folded:
            continue
        for name in node.outputs:
            live[name] = live_sizes.get(name, 0.0)
        peak = max(peak, sum(live.values()))
        for name in node.inputs:
            if last_use.get(name) == index and name in live:
                del live[name]
    return peak


def cost_graph(skeleton: GraphSkeleton, shapes: Mapping[str, Sequence[int]], precision: str = "fp32") -> GraphCost:
    """FLOPs and bytes of every node of ``skeleton`` when run on inputs of ``shapes`` at ``precision``."""
    if precision not in PRECISION_BYTES:
        raise CostModelError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISION_BYTES)}")
    element_bytes = PRECISION_BYTES[precision]
    infos = skeleton.infer(shapes)
    folded = _folded(skeleton)
    nodes: list[NodeCost] = []
    unknown: set[str] = set()
    sizes: dict[str, float] = {}

    def info(name: str) -> TensorInfo:
        found = infos.get(name)
        if found is None:
            raise CostModelError(f"{skeleton.name}: no static shape for tensor {name!r} at {dict(shapes)}")
        return found

    for node in skeleton.nodes:
        if node.name in folded:
            continue
        ins = [info(name) for name in node.inputs if name]
        outs = [info(name) for name in node.outputs if name]
        for name, out in zip(node.outputs, outs, strict=False):
            sizes[name] = _tensor_bytes(out, element_bytes)
        formula = _formula(node, ins, outs)
        moved = _moved(node, ins, outs, element_bytes)
        if formula is None:
            unknown.add(node.op)
        engine, flops = formula or ("dma", 0.0)
        nodes.append(NodeCost(name=node.name, op=node.op, engine=engine, flops=flops, bytes=moved))
    for name in skeleton.input_names:
        sizes[name] = _tensor_bytes(info(name), element_bytes)
    weights = sum(_tensor_bytes(t, element_bytes) for t in skeleton.weights.values())
    return GraphCost(
        model=skeleton.name,
        shapes={name: tuple(int(d) for d in dims) for name, dims in shapes.items()},
        precision=precision,
        nodes=nodes,
        unknown_ops=sorted(unknown),
        folded_nodes=len(folded),
        weight_bytes=weights,
        peak_activation_bytes=_peak_activation(skeleton, sizes, folded),
    )
