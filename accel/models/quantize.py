"""INT8 variant of an encoder: onnxruntime dynamic quantisation with per-channel weights.

Only MatMul weights are quantised: they are where the time goes, and keeping the embedding table,
LayerNorm and softmax in float32 keeps the fidelity loss small (measured in tests/accel/test_quantize.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

from onnxruntime.quantization import QuantType, quantize_dynamic


class _NoPreprocessingHint(logging.Filter):
    """Drops the quantiser's "consider pre-processing" advice (logged on the root logger at every call): our
    graphs are built with concrete shapes by accel itself, and the INT8 fidelity is measured in the tests."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def quantize_int8(source: Path, target: Path) -> None:
    """Write an INT8 (signed, per-output-channel weights; dynamic uint8 activations) copy of ``source``."""
    # onnxruntime's quantiser logs every node at INFO; keep our logs readable.
    logging.getLogger("onnxruntime").setLevel(logging.WARNING)
    hint = _NoPreprocessingHint()
    logging.getLogger().addFilter(hint)
    try:
        quantize_dynamic(
            str(source),
            str(target),
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
        )
    finally:
        logging.getLogger().removeFilter(hint)
