"""Retrieval quality on LoCoMo: evidence recall@5/@10 of BM25-only, vector-only and hybrid event search.

Each conversation of ../shared/data/locomo is ingested as the events of one actor (one session per
LoCoMo session, the turn's dia_id in the event metadata); every question with evidence is asked with
``search_events`` in each mode. recall@k = share of a question's evidence turns among the top k, averaged
over questions. LoCoMo is CC BY-NC 4.0: it is read from ../shared at run time, never copied.

Prints a table (overall and per question category) on stderr and ONE JSON line on stdout
(``hybrid_over_best_single_recall@10`` is the ratio).
Usage: python bench/memory_locomo.py [--conversations conv-26,...] [--db sqlite:///path]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentcore.memory import MemoryStore, NewEvent

LOCOMO = Path(os.environ.get("AGENTCORE_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared")) / "data/locomo"
MODES = ("fulltext", "vector", "hybrid")
KS = (5, 10)


@dataclass(frozen=True)
class Question:
    sample_id: str
    text: str
    evidence: frozenset[str]
    category: str


def load(folder: Path = LOCOMO) -> tuple[list[dict[str, object]], list[Question]]:
    conversations = json.loads((folder / "locomo_conversations.json").read_text())
    questions = [
        Question(row["sample_id"], row["question"], frozenset(row["evidence"]), row["category_name"])
        for row in map(json.loads, (folder / "locomo_qa.jsonl").read_text().splitlines())
        if row["evidence"]
    ]
    return conversations, questions


def _session_time(value: str) -> datetime:
    return datetime.strptime(value, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def ingest(store: MemoryStore, conversation: dict[str, object]) -> int:
    """All turns of one conversation as events of the actor named by its sample_id; returns the count."""
    actor, turns = str(conversation["sample_id"]), conversation["conversation"]
    assert isinstance(turns, dict)
    count = 0
    sessions = sorted((int(k.split("_")[1]), k) for k in turns if k.startswith("session_") and "date" not in k)
    for _, key in sessions:
        started = _session_time(turns[f"{key}_date_time"])
        events = [
            NewEvent(
                role="user",
                text=f"{turn['speaker']}: {turn['text']}"
                + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else ""),
                metadata={"dia_id": turn["dia_id"]},
                created_at=started + timedelta(seconds=index),
            )
            for index, turn in enumerate(turns[key])
        ]
        count += len(store.add_events(actor, key, events))
    store.index_events(actor)
    return count


def evaluate(store: MemoryStore, questions: Iterable[Question]) -> dict[str, dict[int, float]]:
    """Mean evidence recall@k per mode over ``questions``."""
    totals = {mode: dict.fromkeys(KS, 0.0) for mode in MODES}
    asked = 0
    for question in questions:
        vector = store.embed(question.sample_id, [question.text])[0]
        for mode in MODES:
            hits = store.search_events(
                question.sample_id, question.text, top_k=max(KS), mode=mode, query_embedding=vector
            )
            found = [hit.event.metadata.get("dia_id") for hit in hits]
            for k in KS:
                totals[mode][k] += len(question.evidence & set(found[:k])) / len(question.evidence)
        asked += 1
    return {mode: {k: value / max(asked, 1) for k, value in per_k.items()} for mode, per_k in totals.items()}


def by_category(
    store: MemoryStore, questions: Sequence[Question]
) -> tuple[dict[str, dict[int, float]], dict[str, dict[str, dict[int, float]]], dict[str, int]]:
    """Recall per mode overall and per question category (each question asked once), and category sizes."""
    groups: dict[str, list[Question]] = {}
    for question in questions:
        groups.setdefault(question.category, []).append(question)
    per_category = {category: evaluate(store, asked) for category, asked in sorted(groups.items())}
    sizes = {category: len(asked) for category, asked in groups.items()}
    total = max(sum(sizes.values()), 1)
    overall = {mode: {k: sum(per_category[c][mode][k] * sizes[c] for c in sizes) / total for k in KS} for mode in MODES}
    return overall, per_category, sizes


def run(sample_ids: Sequence[str] | None, url: str) -> dict[str, object]:
    conversations, questions = load()
    chosen = [c for c in conversations if sample_ids is None or c["sample_id"] in sample_ids]
    wanted = {str(c["sample_id"]) for c in chosen}
    selected = [q for q in questions if q.sample_id in wanted]
    with MemoryStore(url) as store:
        started = time.perf_counter()
        turns = sum(ingest(store, conversation) for conversation in chosen)
        ingest_s = time.perf_counter() - started
        started = time.perf_counter()
        recall, per_category, sizes = by_category(store, selected)
        query_s = time.perf_counter() - started
    best_single = max(recall["fulltext"][10], recall["vector"][10])
    print(f"{'category':14} {'n':>4} " + " ".join(f"{m[:6]}@{k:<2}" for m in MODES for k in KS), file=sys.stderr)
    for category, values in [*per_category.items(), ("all", recall)]:
        cells = " ".join(f"{values[m][k]:9.3f}" for m in MODES for k in KS)
        print(f"{category:14} {sizes.get(category, len(selected)):4} {cells}", file=sys.stderr)
    return {
        "bench": "memory_locomo",
        "conversations": sorted(wanted),
        "turns": turns,
        "questions": len(selected),
        **{f"recall@{k}": {mode: round(recall[mode][k], 4) for mode in MODES} for k in KS},
        "per_category": {
            category: {"questions": sizes[category]}
            | {f"recall@{k}": {mode: round(values[mode][k], 4) for mode in MODES} for k in KS}
            for category, values in per_category.items()
        },
        "hybrid_over_best_single_recall@10": round(recall["hybrid"][10] / best_single, 4),
        "ingest_and_embed_s": round(ingest_s, 2),
        "queries_per_s": round(len(selected) * len(MODES) / query_s, 1),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", help="comma-separated sample ids (default: all)")
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.db or f"sqlite:///{folder}/locomo.db"
        print(json.dumps(run(args.conversations.split(",") if args.conversations else None, url)))


if __name__ == "__main__":
    main()
