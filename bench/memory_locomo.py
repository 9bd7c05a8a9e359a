"""Retrieval quality on LoCoMo: evidence recall@5/@10 of BM25-only, vector-only and hybrid event search.

Each conversation of ../shared/data/locomo is ingested as the events of one actor (one session per
LoCoMo session, the turn's dia_id in the event metadata); every question with evidence is asked with
``search_events`` in each variant (BM25-only, vector-only, hybrid without and with the session-context
rerank; CPU time per search is measured around each call, interleaved). recall@k = share of a question's
evidence turns among the top k, averaged over questions. LoCoMo is CC BY-NC 4.0: it is read from ../shared
at run time, never copied.

Prints a table (overall and per question category) on stderr and ONE JSON line on stdout
(``hybrid_over_best_single_recall@10`` is the ratio; ``per_conversation`` gives the tuning split: the
session-context weights were chosen on conv-26 and conv-44, conv-49 and conv-50 are held out).
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentcore.memory import MemoryStore, NewEvent

LOCOMO = Path(os.environ.get("AGENTCORE_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared")) / "data/locomo"
# The two single rankers, hybrid without and with its session-context rerank (the default).
VARIANTS: dict[str, dict[str, Any]] = {
    "fulltext": {"mode": "fulltext"},
    "vector": {"mode": "vector"},
    "hybrid_no_context": {"mode": "hybrid", "session_context": False},
    "hybrid": {"mode": "hybrid"},
}
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


def ask(
    store: MemoryStore, question: Question, *, backwards: bool = False
) -> tuple[dict[str, dict[int, float]], dict[str, float]]:
    """Evidence recall@k of one question in each variant, and the CPU seconds each search took.

    ``backwards`` runs the variants in reverse order, so alternating it spreads warm-cache effects evenly.
    """
    vector = store.embed(question.sample_id, [question.text])[0]
    recall: dict[str, dict[int, float]] = {}
    cpu: dict[str, float] = {}
    for name in reversed(VARIANTS) if backwards else VARIANTS:
        options = VARIANTS[name]
        started = time.process_time()
        hits = store.search_events(question.sample_id, question.text, top_k=max(KS), query_embedding=vector, **options)
        cpu[name] = time.process_time() - started
        found = [hit.event.metadata.get("dia_id") for hit in hits]
        recall[name] = {k: len(question.evidence & set(found[:k])) / len(question.evidence) for k in KS}
    return recall, cpu


def mean(rows: Sequence[dict[str, dict[int, float]]]) -> dict[str, dict[int, float]]:
    return {name: {k: sum(row[name][k] for row in rows) / max(len(rows), 1) for k in KS} for name in VARIANTS}


def evaluate(store: MemoryStore, questions: Iterable[Question]) -> dict[str, dict[int, float]]:
    """Mean evidence recall@k per variant over ``questions``."""
    return mean([ask(store, question)[0] for question in questions])


def grouped(
    rows: Sequence[tuple[Question, dict[str, dict[int, float]]]], key: Callable[[Question], str]
) -> dict[str, tuple[int, dict[str, dict[int, float]]]]:
    """Question count and mean recall per group of ``key``."""
    groups: dict[str, list[dict[str, dict[int, float]]]] = {}
    for question, recall in rows:
        groups.setdefault(key(question), []).append(recall)
    return {name: (len(found), mean(found)) for name, found in sorted(groups.items())}


def cells(recall: dict[str, dict[int, float]]) -> dict[str, dict[str, float]]:
    return {f"recall@{k}": {name: round(recall[name][k], 4) for name in VARIANTS} for k in KS}


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
        answers = [(question, *ask(store, question, backwards=n % 2 == 1)) for n, question in enumerate(selected)]
        query_s = time.perf_counter() - started
    rows = [(question, recall) for question, recall, _ in answers]
    recall = mean([recall for _, recall in rows])
    per_category = grouped(rows, lambda question: question.category)
    cpu_ms = {name: 1000 * sum(cpu[name] for *_, cpu in answers) / max(len(answers), 1) for name in VARIANTS}
    names = " ".join(f"{name[:9]:>9}@{k:<2}" for name in VARIANTS for k in KS)
    print(f"{'category':14} {'n':>4} {names}", file=sys.stderr)
    for category, (size, values) in [*per_category.items(), ("all", (len(selected), recall))]:
        print(
            f"{category:14} {size:4} " + " ".join(f"{values[n][k]:12.3f}" for n in VARIANTS for k in KS),
            file=sys.stderr,
        )
    best_single = max(recall["fulltext"][10], recall["vector"][10])
    return {
        "bench": "memory_locomo",
        "conversations": sorted(wanted),
        "turns": turns,
        "questions": len(selected),
        **cells(recall),
        "per_category": {name: {"questions": size} | cells(values) for name, (size, values) in per_category.items()},
        "per_conversation": {
            name: {"questions": size} | cells(values)
            for name, (size, values) in grouped(rows, lambda question: question.sample_id).items()
        },
        "hybrid_over_best_single_recall@10": round(recall["hybrid"][10] / best_single, 4),
        "cpu_ms_per_query": {name: round(value, 2) for name, value in cpu_ms.items()},
        "session_context_cpu_ratio": round(cpu_ms["hybrid"] / cpu_ms["hybrid_no_context"], 3),
        "ingest_and_embed_s": round(ingest_s, 2),
        "queries_per_s": round(len(selected) * len(VARIANTS) / query_s, 1),
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
