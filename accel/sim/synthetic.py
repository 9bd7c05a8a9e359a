"""Synthetic ONNX graphs for capacity studies: the shape of a workload without its weights.

Weights are declared (name, dims, dtype) but hold no data, so a 4096-wide, 8-layer MLP costs nothing to
build; the cost model needs shapes only. ``compute-bound`` and ``memory-bound`` presets run these.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper


def _shape_only(name: str, dims: list[int]) -> TensorProto:
    """A float initializer with dims and no payload (marked external, never loaded)."""
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "synthetic-no-data"
    return tensor


def mlp_graph(width: int, layers: int) -> onnx.ModelProto:
    """``layers`` square ``width x width`` MatMuls in a chain: pure Tensor-engine work, batch-leading input."""
    if width < 1 or layers < 1:
        raise ValueError("an MLP needs width >= 1 and layers >= 1")
    nodes = []
    weights = []
    previous = "x"
    for index in range(layers):
        weight = f"w{index}"
        weights.append(_shape_only(weight, [width, width]))
        output = "y" if index == layers - 1 else f"h{index}"
        nodes.append(helper.make_node("MatMul", [previous, weight], [output], name=f"matmul_{index}"))
        previous = output
    graph = helper.make_graph(
        nodes,
        f"mlp-{width}x{layers}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
        initializer=weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
