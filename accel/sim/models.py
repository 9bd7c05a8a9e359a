"""Models the simulator can cost: the built text encoder, any ONNX file, and synthetic graphs.

A :class:`SimModel` knows how to turn (batch, sequence length) into concrete input shapes and caches
the graph cost of each shape, so a model is walked once per shape in a process.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import onnx

from agentcore.accel.errors import CostModelError
from agentcore.accel.sim.cost import GraphCost, cost_graph
from agentcore.accel.sim.graph import GraphSkeleton
from agentcore.accel.sim.synthetic import mlp_graph

_MLP_NAME = re.compile(r"^mlp-(\d+)x(\d+)$")
BUILTIN_MODELS = ("minilm", "minilm-int8", "mlp-WIDTHxLAYERS (e.g. mlp-4096x8)", "path/to/model.onnx")


class SimModel:
    """An ONNX graph plus its input layout: axis 0 is the batch, other symbolic axes are the sequence."""

    def __init__(self, model: onnx.ModelProto, name: str) -> None:
        self.name = name
        self.skeleton = GraphSkeleton(model, name)
        weights = {init.name for init in model.graph.initializer}
        self.input_dims = {
            value.name: tuple(
                dim.dim_value if dim.HasField("dim_value") else None for dim in value.type.tensor_type.shape.dim
            )
            for value in model.graph.input
            if value.name not in weights
        }
        self._costs: dict[tuple[int, int, str], GraphCost] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: Path, name: str) -> SimModel:
        try:
            model = onnx.load(str(path), load_external_data=False)
        except Exception as error:  # onnx raises DecodeError and others for damaged files
            raise CostModelError(f"cannot read ONNX model {path}: {error}") from error
        return cls(model, name)

    def shapes(self, batch: int, seq: int) -> dict[str, tuple[int, ...]]:
        return {
            name: tuple(batch if axis == 0 else (seq if size is None else size) for axis, size in enumerate(dims))
            for name, dims in self.input_dims.items()
        }

    def cost(self, batch: int, seq: int, precision: str) -> GraphCost:
        key = (batch, seq, precision)
        with self._lock:
            cached = self._costs.get(key)
        if cached is None:
            cached = cost_graph(self.skeleton, self.shapes(batch, seq), precision)
            with self._lock:
                self._costs[key] = cached
        return cached


_loaded: dict[str, SimModel] = {}
_loaded_lock = threading.Lock()


def _load(name: str) -> SimModel:
    match = _MLP_NAME.match(name)
    if match:
        return SimModel(mlp_graph(int(match[1]), int(match[2])), name)
    if name in {"minilm", "minilm-int8"}:
        from agentcore.accel.models.registry import ensure_built, load_verified

        built = ensure_built()
        path = load_verified(built, "int8" if name.endswith("int8") else "fp32")
        return SimModel.from_file(path, name)
    path = Path(name)
    if path.suffix == ".onnx" and path.is_file():
        return SimModel.from_file(path, path.stem)
    raise CostModelError(f"unknown model {name!r}; use one of: {', '.join(BUILTIN_MODELS)}")


def resolve_model(name: str) -> SimModel:
    """The process-wide :class:`SimModel` for a model name or ONNX path (costs are shared)."""
    with _loaded_lock:
        model = _loaded.get(name)
        if model is None:
            model = _loaded[name] = _load(name)
        return model


def model_from_file(path: Path, name: str) -> SimModel:
    """The shared :class:`SimModel` of an ONNX file already verified by the caller (keyed by path)."""
    key = str(path)
    with _loaded_lock:
        model = _loaded.get(key)
        if model is None:
            model = _loaded[key] = SimModel.from_file(path, name)
        return model
