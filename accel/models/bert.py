"""Build the ONNX graph of a BERT-family sentence encoder from safetensors weights, without PyTorch.

The graph computes what sentence-transformers computes for a BERT encoder with mean pooling and
normalisation: token + position + type embeddings, LayerNorm, N post-LN transformer layers (masked
multi-head self-attention, erf-GELU feed-forward), mean pooling over real tokens, L2 normalisation.
Batch and sequence axes are dynamic. ``reference.py`` computes the same forward pass in numpy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from pydantic import BaseModel, ConfigDict
from safetensors.numpy import load_file

from agentcore.errors import ModelError

OPSET = 17
_PREFIXES = ("bert.", "model.", "encoder_model.")


class BertConfig(BaseModel):
    """The fields of an HF ``config.json`` that the encoder's shape depends on."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    vocab_size: int
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    model_type: str = "bert"

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_folder(cls, folder: Path) -> BertConfig:
        config = cls.model_validate(json.loads((folder / "config.json").read_text()))
        if config.hidden_act not in {"gelu", "gelu_new", "gelu_python"}:
            raise ModelError(f"{folder}/config.json: hidden_act {config.hidden_act!r} is not supported (gelu only)")
        if config.hidden_size % config.num_attention_heads:
            raise ModelError(f"{folder}/config.json: hidden_size is not a multiple of num_attention_heads")
        return config


Weights = dict[str, np.ndarray]


def load_weights(folder: Path) -> Weights:
    """Read safetensors weights as float32 numpy arrays, with any ``bert.``-style prefix removed."""
    path = folder / "model.safetensors"
    try:
        raw = load_file(str(path))
    except Exception as error:  # safetensors raises its own untyped errors for truncated files
        raise ModelError(f"cannot read {path}: {error}; the file is damaged, fetch the model again") from error
    weights: Weights = {}
    for name, array in raw.items():
        for prefix in _PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        weights[name] = array.astype(np.float32) if array.dtype.kind == "f" else array
    if "embeddings.word_embeddings.weight" not in weights:
        raise ModelError(f"{path} does not hold BERT weights (no embeddings.word_embeddings.weight)")
    return weights


class _GraphBuilder:
    """Accumulates nodes and initializers with unique names; keeps the encoder code readable."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        self._count += 1
        output = name or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=f"n{self._count}_{op_type}", **attrs))
        return output

    def linear(self, x: str, weights: Weights, prefix: str) -> str:
        """``x @ W.T + b`` with W stored transposed once, at build time."""
        w = self.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: Weights, prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)


def build_encoder_graph(config: BertConfig, weights: Weights) -> onnx.ModelProto:
    """The sentence encoder as an ONNX model: ``input_ids``, ``attention_mask`` -> ``embeddings``."""
    g = _GraphBuilder()
    heads, head_size = config.num_attention_heads, config.head_size

    # Embeddings: word + position (0..seq-1) + token type 0 (sentence encoders use a single segment).
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)  # 1-D [seq]
    position = g.op(
        "Slice",
        [
            g.const("position_embeddings", weights["embeddings.position_embeddings.weight"]),
            g.const("zero_start", np.array([0], np.int64)),
            seq_len,
            g.const("axis_0", np.array([0], np.int64)),
        ],
    )
    word = g.op("Gather", [g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids"])
    token_type = g.const("token_type_0", weights["embeddings.token_type_embeddings.weight"][0])
    x = g.op("Add", [g.op("Add", [word, position]), token_type])
    x = g.layer_norm(x, weights, "embeddings.LayerNorm", config.layer_norm_eps)

    # Additive attention bias [batch, 1, 1, seq]: 0 for real tokens, -10000 for padding (as HF BERT).
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT, name="mask_float")
    bias = g.op(
        "Mul",
        [g.op("Sub", [g.const("one_f", np.array(1.0, np.float32)), mask]), g.const("neg", np.array(-1e4, np.float32))],
    )
    bias = g.op("Unsqueeze", [bias, g.const("axes_1_2", np.array([1, 2], np.int64))])

    split_heads = g.const("split_heads_shape", np.array([0, 0, heads, head_size], np.int64))
    merge_heads = g.const("merge_heads_shape", np.array([0, 0, config.hidden_size], np.int64))
    scale = g.const("attention_scale", np.array(1.0 / np.sqrt(head_size), np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    one = g.const("one_f32", np.array(1.0, np.float32))
    inv_sqrt2 = g.const("inv_sqrt2", np.array(1.0 / np.sqrt(2.0), np.float32))

    for layer in range(config.num_hidden_layers):
        p = f"encoder.layer.{layer}"
        q = g.op(
            "Transpose",
            [g.op("Reshape", [g.linear(x, weights, f"{p}.attention.self.query"), split_heads])],
            perm=[0, 2, 1, 3],
        )
        k = g.op(
            "Transpose",
            [g.op("Reshape", [g.linear(x, weights, f"{p}.attention.self.key"), split_heads])],
            perm=[0, 2, 3, 1],
        )
        v = g.op(
            "Transpose",
            [g.op("Reshape", [g.linear(x, weights, f"{p}.attention.self.value"), split_heads])],
            perm=[0, 2, 1, 3],
        )
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
        attended = g.linear(context, weights, f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", [attended, x]), weights, f"{p}.attention.output.LayerNorm", config.layer_norm_eps)

        hidden = g.linear(x, weights, f"{p}.intermediate.dense")
        gelu = g.op(
            "Mul", [g.op("Mul", [hidden, half]), g.op("Add", [g.op("Erf", [g.op("Mul", [hidden, inv_sqrt2])]), one])]
        )
        out = g.linear(gelu, weights, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", [out, x]), weights, f"{p}.output.LayerNorm", config.layer_norm_eps)

    # Mean pooling over real tokens, then L2 normalisation (sentence-transformers' Pooling + Normalize).
    mask3 = g.op("Unsqueeze", [mask, g.const("axis_2", np.array([2], np.int64))])
    axis1 = g.const("axis_1", np.array([1], np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask3]), axis1], keepdims=0)
    counts = g.op(
        "Max", [g.op("ReduceSum", [mask3, axis1], keepdims=0), g.const("min_count", np.array(1e-9, np.float32))]
    )
    pooled = g.op("Div", [summed, counts])
    norm = g.op("ReduceL2", [pooled], axes=[-1], keepdims=1)  # axes is an attribute until opset 18
    norm = g.op("Max", [norm, g.const("min_norm", np.array(1e-12, np.float32))])
    g.op("Div", [pooled, norm], name="embeddings")

    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        outputs=[helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", config.hidden_size])],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="agentcore")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model
