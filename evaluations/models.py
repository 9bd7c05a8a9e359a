"""Batched, cached access to accel for evaluators: sentence embeddings and the small ONNX task heads.

All model work of an evaluation run goes through one :class:`Models`, so every text is embedded once (in
one batched ``Accelerator.embed`` call per prefetch) and each head runs once per evaluator over all its
targets; the receipts are kept so each result can report its share as usage.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from agentcore.evaluations.errors import EvaluationError
from agentcore.evaluations.result import Usage

if TYPE_CHECKING:
    from agentcore.accel.runtime import Accelerator, Receipt

HEADS_DIR = Path(__file__).resolve().parent / "heads"


class Models:
    """Embeddings and heads for one run, charged to ``tenant``/``agent``."""

    def __init__(self, accelerator: Accelerator | None = None, *, tenant: str = "default", agent: str | None = None):
        self._accelerator = accelerator
        self.tenant = tenant
        self.agent = agent
        self._vectors: dict[str, np.ndarray] = {}
        self.embed_receipts: list[Receipt] = []
        self.head_receipts: dict[str, list[Receipt]] = {}

    @property
    def accelerator(self) -> Accelerator:
        if self._accelerator is None:
            from agentcore.accel.runtime import Accelerator

            self._accelerator = Accelerator()
        return self._accelerator

    def prefetch(self, texts: Iterable[str]) -> None:
        """Embed every text not yet cached, in one batched accel call."""
        missing = sorted({text for text in texts if text not in self._vectors})
        if not missing:
            return
        result = self.accelerator.embed(missing, tenant=self.tenant, agent=self.agent)
        self.embed_receipts.append(result.receipt)
        for text, vector in zip(missing, result.vectors, strict=True):
            self._vectors[text] = vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, 384]`` unit vectors for ``texts`` (cached; missing ones embedded in one batch)."""
        self.prefetch(texts)
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._vectors[text] for text in texts])

    def head(self, name: str, features: np.ndarray, *, owner: str) -> np.ndarray:
        """Run the shipped head ``heads/<name>.onnx`` on ``features [n, k]`` -> scores ``[n]`` in [0, 1]."""
        path = HEADS_DIR / f"{name}.onnx"
        if not path.is_file():
            raise EvaluationError(f"task head {path} is missing; reinstall agentcore or run evaluations/training")
        if len(features) == 0:
            return np.zeros(0, dtype=np.float32)
        result = self.accelerator.infer(
            path, {"features": np.asarray(features, dtype=np.float32)}, tenant=self.tenant, agent=self.agent
        )
        self.head_receipts.setdefault(owner, []).append(result.receipt)
        return np.asarray(result.outputs["score"], dtype=np.float32).reshape(-1)

    def embedding_usage(self, count: int) -> Usage | None:
        """The share of embedding cost of ``count`` texts (mean cost per embedded text so far)."""
        items = sum(receipt.items for receipt in self.embed_receipts)
        if count == 0 or items == 0:
            return None
        return _share(self.embed_receipts, count, count / items)

    def head_usage(self, owner: str, targets: int) -> Usage | None:
        """One target's share of the head runs made for evaluator ``owner``."""
        receipts = self.head_receipts.get(owner, [])
        if not receipts or targets == 0:
            return None
        return _share(receipts, 1, 1 / targets)


def _share(receipts: list[Receipt], items: int, fraction: float) -> Usage:
    """``fraction`` of the summed receipts (real CPU time and the simulated device time, dollars and joules)."""

    def total(field: str) -> float:
        return sum(float(getattr(receipt, field, 0.0)) for receipt in receipts) * fraction

    return Usage(
        model=receipts[0].model,
        items=items,
        tokens=round(total("tokens")),
        cpu_seconds=total("cpu_seconds"),
        device_seconds=round(total("device_seconds"), 9),
        usd=round(total("usd"), 12),
        joules=round(total("joules"), 9),
    )
