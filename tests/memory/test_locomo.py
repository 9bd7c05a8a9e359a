"""Retrieval quality on a real LoCoMo conversation (tests only: CC BY-NC data read from ../shared).

Uses the harness of bench/memory_locomo.py on conv-26 (419 turns, 197 questions with evidence turns).
Measured here, recall@10 BM25 / vector / hybrid without session context / hybrid: 0.622 / 0.425 / 0.650 /
0.794 on SQLite, 0.565 / 0.425 / 0.610 / 0.726 on PostgreSQL. The floors below sit a little under those so
that a real regression fails.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from agentcore.memory import MemoryStore

pytestmark = pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)

BENCH = Path(__file__).resolve().parents[2] / "bench" / "memory_locomo.py"


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_locomo", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_hybrid_beats_bm25_and_vector_on_evidence_recall(
    make_store: Callable[..., MemoryStore], shared_data: Callable[..., Path]
) -> None:
    harness = _harness()
    conversations, questions = harness.load(shared_data("locomo"))
    conversation = next(c for c in conversations if c["sample_id"] == "conv-26")
    store = make_store()
    assert harness.ingest(store, conversation) == 419
    asked = [q for q in questions if q.sample_id == "conv-26"]
    assert len(asked) == 197
    recall = harness.evaluate(store, asked)
    assert recall["hybrid"][10] > recall["fulltext"][10]
    assert recall["hybrid"][10] > recall["vector"][10]
    assert recall["hybrid"][5] > max(recall["fulltext"][5], recall["vector"][5])
    assert recall["hybrid"][10] >= 0.70
    assert recall["hybrid"][10] >= recall["hybrid_no_context"][10] + 0.08  # what the session context adds
    other = store.search_events("conv-44", "Caroline support group")  # another actor sees none of conv-26
    assert other == []
