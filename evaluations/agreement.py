"""Readers for the public labelled data sets the evaluators are measured (and some heads trained) on.

Shared by ``scripts/train_eval_heads.py``, ``bench/evaluator_agreement.py`` and the tests, so all three split
and read the data the same way. No data ships with the package; each reader takes the data folder.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def split_of(key: str) -> str:
    """``"train"`` or ``"test"``: a stable half split by a record's group key (question, instruction...)."""
    return "train" if hashlib.sha256(key.encode()).digest()[0] % 2 == 0 else "test"


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def halueval_qa(data: Path, split: str | None = None) -> list[dict[str, Any]]:
    """HaluEval QA rows (knowledge, question, right_answer, answer, label), optionally one half by question."""
    rows = read_jsonl(data / "halueval" / "halueval_qa.jsonl")
    return [row for row in rows if split is None or split_of(row["question_id"]) == split]


def halueval_general(data: Path, split: str | None = None) -> list[dict[str, Any]]:
    rows = read_jsonl(data / "halueval" / "halueval_general.jsonl")
    return [row for row in rows if split is None or split_of(str(row["id"])) == split]


def pandalm_pairs(data: Path, split: str | None = None) -> list[dict[str, Any]]:
    """PandaLM pairs with a majority preference (ties dropped): request, better, worse."""
    pairs = []
    for row in read_jsonl(data / "pandalm_human" / "pandalm_testset.jsonl"):
        if row["majority_label"] == 0 or (split is not None and split_of(row["instruction"]) != split):
            continue
        request = (row["instruction"] + "\n\n" + row["input"]).strip()
        better, worse = (
            (row["response1"], row["response2"]) if row["majority_label"] == 1 else (row["response2"], row["response1"])
        )
        pairs.append({"request": request, "better": better, "worse": worse})
    return pairs


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    pos = np.asarray(positive, dtype=np.float64)[:, None]
    neg = np.asarray(negative, dtype=np.float64)[None, :]
    if pos.size == 0 or neg.size == 0:
        raise ValueError("AUROC needs at least one positive and one negative")
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def spearman(left: Sequence[float], right: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties)."""

    def ranks(values: Sequence[float]) -> np.ndarray:
        array = np.asarray(values, dtype=np.float64)
        order = array.argsort(kind="stable")
        ranked = np.empty(len(array))
        ranked[order] = np.arange(len(array))
        for value in np.unique(array):
            tied = array == value
            ranked[tied] = ranked[tied].mean()
        return ranked

    a, b = ranks(left), ranks(right)
    return float(np.corrcoef(a, b)[0, 1])
