"""A plain numpy forward pass of the BERT sentence encoder: the oracle for the ONNX graph's parity tests.

Written independently of ``bert.py`` (no shared graph code), in float64, so that a mistake in the
builder cannot hide in the oracle.
"""

from __future__ import annotations

from math import erf, sqrt

import numpy as np

from agentcore.accel.models.bert import BertConfig, Weights

_erf = np.vectorize(erf, otypes=[np.float64])


def _layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * scale + bias


def _dense(x: np.ndarray, weights: Weights, prefix: str) -> np.ndarray:
    return x @ weights[f"{prefix}.weight"].astype(np.float64).T + weights[f"{prefix}.bias"]


def encode_reference(
    config: BertConfig, weights: Weights, input_ids: np.ndarray, attention_mask: np.ndarray
) -> np.ndarray:
    """Unit-norm sentence embeddings ``[batch, hidden]`` for token ids ``[batch, seq]`` and their mask."""
    w = {name: array.astype(np.float64) if array.dtype.kind == "f" else array for name, array in weights.items()}
    batch, seq = input_ids.shape
    heads, size = config.num_attention_heads, config.head_size
    eps = config.layer_norm_eps

    x = (
        w["embeddings.word_embeddings.weight"][input_ids]
        + w["embeddings.position_embeddings.weight"][np.arange(seq)][None, :, :]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    mask = attention_mask.astype(np.float64)
    bias = (1.0 - mask)[:, None, None, :] * -1e4

    for layer in range(config.num_hidden_layers):
        p = f"encoder.layer.{layer}"

        def heads_first(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)

        q = heads_first(_dense(x, w, f"{p}.attention.self.query"))
        k = heads_first(_dense(x, w, f"{p}.attention.self.key"))
        v = heads_first(_dense(x, w, f"{p}.attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / sqrt(size) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * size)
        x = _layer_norm(
            _dense(context, w, f"{p}.attention.output.dense") + x,
            w[f"{p}.attention.output.LayerNorm.weight"],
            w[f"{p}.attention.output.LayerNorm.bias"],
            eps,
        )
        hidden = _dense(x, w, f"{p}.intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / sqrt(2.0)))
        x = _layer_norm(
            _dense(hidden, w, f"{p}.output.dense") + x,
            w[f"{p}.output.LayerNorm.weight"],
            w[f"{p}.output.LayerNorm.bias"],
            eps,
        )

    pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
