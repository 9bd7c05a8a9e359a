"""An ONNX graph reduced to what costing needs, and ONNX shape inference at concrete input shapes.

Large initializers are replaced by shape-only graph inputs before inference, so inferring shapes of an
85 MB encoder serialises kilobytes, not the weights. Small initializers keep their values because shape
computations (``Reshape`` targets, ``Slice`` bounds) read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import onnx
from onnx import TensorProto, helper, shape_inference

from agentcore.accel.errors import CostModelError

_KEEP_VALUES_UP_TO = 64  # elements; shape-computation constants are tiny


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    dtype: int  # onnx.TensorProto data type

    @property
    def elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(frozen=True)
class Node:
    name: str
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: dict[str, object]


class GraphSkeleton:
    """Nodes, weights and dynamic inputs of an ONNX model, ready for repeated shape inference."""

    def __init__(self, model: onnx.ModelProto, name: str) -> None:
        self.name = name
        graph = model.graph
        self.weights = {
            init.name: TensorInfo(tuple(int(d) for d in init.dims), init.data_type) for init in graph.initializer
        }
        self.input_names = [value.name for value in graph.input if value.name not in self.weights]
        self.nodes = [
            Node(
                name=node.name or f"{node.op_type}_{index}",
                op=node.op_type,
                inputs=tuple(node.input),
                outputs=tuple(node.output),
                attributes={attr.name: helper.get_attribute_value(attr) for attr in node.attribute},
            )
            for index, node in enumerate(graph.node)
        ]
        self._skeleton = self._strip(model)

    def _strip(self, model: onnx.ModelProto) -> onnx.ModelProto:
        skeleton = onnx.ModelProto()
        skeleton.CopyFrom(model)
        graph = skeleton.graph
        kept = [init for init in graph.initializer if self.weights[init.name].elements <= _KEEP_VALUES_UP_TO]
        large = [init for init in graph.initializer if self.weights[init.name].elements > _KEEP_VALUES_UP_TO]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        graph.input.extend(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)) for init in large)
        del graph.value_info[:]
        return skeleton

    def infer(self, shapes: Mapping[str, Sequence[int]]) -> dict[str, TensorInfo]:
        """Shape and dtype of every tensor at the given concrete input shapes."""
        missing = [name for name in self.input_names if name not in shapes]
        unknown = [name for name in shapes if name not in self.input_names]
        if missing or unknown:
            raise CostModelError(
                f"{self.name}: give a shape for each input {self.input_names}; missing {missing}, unknown {unknown}"
            )
        model = onnx.ModelProto()
        model.CopyFrom(self._skeleton)
        for value in model.graph.input:
            if value.name in shapes:
                dims = value.type.tensor_type.shape.dim
                wanted = [int(d) for d in shapes[value.name]]
                if len(dims) != len(wanted) or any(d < 1 for d in wanted):
                    raise CostModelError(
                        f"{self.name}: input {value.name!r} needs {len(dims)} positive dims, got {wanted}"
                    )
                for dim, size in zip(dims, wanted, strict=True):
                    dim.Clear()
                    dim.dim_value = size
        infos = dict(self.weights)
        while True:
            infos.update(self._infer_once(model, shapes))
            if not _fold_shapes(model, infos):
                return infos

    def _infer_once(self, model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]) -> dict[str, TensorInfo]:
        try:
            graph = shape_inference.infer_shapes(model, data_prop=True).graph
        except Exception as error:  # onnx raises InferenceError subclasses and RuntimeError
            raise CostModelError(f"{self.name}: shape inference failed at {dict(shapes)}: {error}") from error
        infos: dict[str, TensorInfo] = {}
        for value in [*graph.input, *graph.value_info, *graph.output]:
            tensor = value.type.tensor_type
            if tensor.HasField("shape") and all(dim.HasField("dim_value") for dim in tensor.shape.dim):
                infos[value.name] = TensorInfo(tuple(dim.dim_value for dim in tensor.shape.dim), tensor.elem_type)
        return infos


def _fold_shapes(model: onnx.ModelProto, infos: Mapping[str, TensorInfo]) -> bool:
    """Replace each ``Shape`` node whose input shape is now known by a constant; True if any changed.

    ONNX's data propagation does not follow ``Shape(start, end)`` into ``Slice``; with concrete shapes
    the value is known, so it becomes a constant and the next inference pass sees through it.
    """
    changed = False
    for index, node in enumerate(model.graph.node):
        source = infos.get(node.input[0]) if node.op_type == "Shape" else None
        if source is None:
            continue
        attributes = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
        rank = len(source.shape)
        start = int(attributes.get("start", 0))
        end = int(attributes.get("end", rank))
        values = list(source.shape[slice(start, end)])
        value = helper.make_tensor(node.output[0] + "_value", TensorProto.INT64, [len(values)], values)
        model.graph.node[index].CopyFrom(helper.make_node("Constant", [], [node.output[0]], value=value))
        changed = True
    return changed


ELEMENT_BYTES: dict[int, int] = {
    TensorProto.FLOAT: 4,
    TensorProto.FLOAT16: 2,
    TensorProto.BFLOAT16: 2,
    TensorProto.DOUBLE: 8,
    TensorProto.INT64: 8,
    TensorProto.INT32: 4,
    TensorProto.INT16: 2,
    TensorProto.INT8: 1,
    TensorProto.UINT8: 1,
    TensorProto.BOOL: 1,
}
FLOAT_TYPES: set[int] = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
