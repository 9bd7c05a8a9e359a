"""Batched, cached access to accel for evaluators: sentence embeddings and the small ONNX task heads.

All model work of an evaluation run goes through one :class:`Models`, so every text is embedded once (in
one batched ``Accelerator.embed`` call per prefetch) and each head runs once per evaluator over all its
targets; the receipts are kept so each result can report its share as usage.
"""

from __future__ import annotations

import functools
import json
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

    def head(self, name: str, features: np.ndarray, *, owner: str, full_range: bool = False) -> np.ndarray:
        """Run the shipped head ``heads/<name>.onnx`` on ``features [n, k]`` -> scores ``[n]`` in [0, 1].

        ``full_range`` rescales a head whose features lie in [0, 1] so that its worst and best feature corners
        score 0 and 1: a logistic head never reaches either end (the faithfulness head tops out at 0.84 with every
        feature at 1.0), so without it a scale's top label would be unreachable. The order of scores is kept.
        """
        path = HEADS_DIR / f"{name}.onnx"
        if not path.is_file():
            raise EvaluationError(f"task head {path} is missing; reinstall agentcore or run evaluations/training")
        if len(features) == 0:
            return np.zeros(0, dtype=np.float32)
        rows = np.asarray(features, dtype=np.float32)
        if full_range:
            rows = np.vstack([rows, _corners(name)])
        result = self.accelerator.infer(path, {"features": rows}, tenant=self.tenant, agent=self.agent)
        self.head_receipts.setdefault(owner, []).append(result.receipt)
        scores = np.asarray(result.outputs["score"], dtype=np.float32).reshape(-1)
        if not full_range:
            return scores
        low, high = scores[-2:]
        return np.clip((scores[:-2] - low) / (high - low), 0.0, 1.0).astype(np.float32)

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


@functools.cache
def _corners(name: str) -> np.ndarray:
    """The head's worst and best rows over features in [0, 1] (each feature at the end its weight favours)."""
    manifest = json.loads((HEADS_DIR / "heads.json").read_text(encoding="utf-8"))
    weights = np.asarray(manifest["heads"][name]["weights"], dtype=np.float32)
    best = (weights > 0).astype(np.float32)
    return np.vstack([1.0 - best, best])


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
