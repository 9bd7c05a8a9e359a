"""Memory store performance versus ChromaDB's embedded PersistentClient, same vectors, same actor filter.

For each size (default 10,000 and 100,000 records over 100 actors) both stores ingest the same records
(text + 384-d vector + actor id) in batches, then answer the same actor-filtered top-10 queries:
- ingest records/s with embeddings precomputed; end-to-end (embedding through accel) on a smaller batch;
- query latency p50/p99, and recall@10 against exact cosine search within the actor.
agentcore answers in "vector" mode with the query vector given (what Chroma does); its hybrid latency
(BM25 + vector, query text embedded through accel) is reported too.

Vectors are real all-MiniLM-L6-v2 embeddings of SICK sentences (../shared/data), each reused record
perturbed by small noise so that 100k vectors stay realistic (clustered, not uniform random).
Needs the `bench` extra (chromadb==1.5.9). Prints ONE JSON line (ratios: >1 means agentcore is better).
Usage: python bench/memory.py [--sizes 10000,100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agentcore import Accelerator
from agentcore.memory import MemoryStore, NewRecord

SHARED = Path(os.environ.get("AGENTCORE_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared")) / "data"
ACTORS = 100
BATCH = 1000
E2E_RECORDS = 1000
SEED = 20261129


def corpus(accelerator: Accelerator, count: int) -> tuple[list[str], np.ndarray]:
    lines = (SHARED / "sick" / "sick.tsv").read_text().splitlines()[1:]
    texts = sorted({line.split("\t")[1] for line in lines} | {line.split("\t")[2] for line in lines})
    rng = np.random.default_rng(SEED)
    chosen = [texts[i] for i in rng.choice(len(texts), min(count, len(texts)), replace=False)]
    return chosen, accelerator.embed(chosen, tenant="bench").vectors


def dataset(texts: list[str], base: np.ndarray, size: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``size`` records: (text, unit vector, actor index), vectors = a real embedding plus small noise."""
    rng = np.random.default_rng(SEED + size)
    source = rng.integers(0, len(texts), size)
    noise = rng.normal(scale=0.03, size=(size, base.shape[1])).astype(np.float32)
    vectors = base[source] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [texts[i] for i in source], vectors.astype(np.float32), np.arange(size) % ACTORS


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000, q))


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def run_size(
    size: int, texts: list[str], base: np.ndarray, queries: int, accelerator: Accelerator
) -> dict[str, object]:
    record_texts, vectors, actors = dataset(texts, base, size)
    rng = np.random.default_rng(SEED - size)
    query_actors = rng.integers(0, ACTORS, queries)
    query_vectors = base[rng.integers(0, len(texts), queries)]
    query_texts = [texts[i] for i in rng.integers(0, len(texts), queries)]
    exact = []
    for actor, query in zip(query_actors, query_vectors, strict=True):
        rows = np.flatnonzero(actors == actor)
        exact.append(set(rows[np.argsort(-(vectors[rows] @ query))[:10]].tolist()))
    result: dict[str, object] = {"records": size, "actors": ACTORS, "queries": queries}
    with tempfile.TemporaryDirectory() as folder:
        # --- agentcore ---
        store = MemoryStore(f"sqlite:///{folder}/agentcore.db", accelerator=accelerator)
        row_of: dict[int, int] = {}

        def ingest_ours() -> None:
            for actor in range(ACTORS):
                rows = np.flatnonzero(actors == actor)
                for start in range(0, len(rows), BATCH):
                    chunk = rows[start : start + BATCH]
                    news = [NewRecord(namespace=f"/users/u{actor}/facts", text=record_texts[i]) for i in chunk]
                    ids = store.add_records(f"u{actor}", news, embeddings=vectors[chunk])
                    row_of.update(zip(ids, chunk.tolist(), strict=True))

        ours_ingest = timed(ingest_ours)
        latencies, recalls = [], []
        for actor, query, truth in zip(query_actors, query_vectors, exact, strict=True):
            started = time.perf_counter()
            hits = store.retrieve(f"u{actor}", "q", mode="vector", query_embedding=query, top_k=10)
            latencies.append(time.perf_counter() - started)
            recalls.append(len({row_of[h.record.id] for h in hits} & truth) / 10)
        hybrid = []
        for actor, text in zip(query_actors, query_texts, strict=True):
            started = time.perf_counter()
            store.retrieve(f"u{actor}", text, top_k=10)
            hybrid.append(time.perf_counter() - started)
        e2e = [NewRecord(namespace="/users/e2e/facts", text=t) for t in texts[:E2E_RECORDS]]
        ours_e2e = timed(lambda: store.add_records("e2e", e2e))
        store.close()
        # --- ChromaDB ---
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=f"{folder}/chroma", settings=Settings(anonymized_telemetry=False))
        collection = client.create_collection("bench", configuration={"hnsw": {"space": "cosine"}})

        def ingest_chroma() -> None:
            for start in range(0, size, BATCH):
                chunk = range(start, min(start + BATCH, size))
                collection.add(
                    ids=[str(i) for i in chunk],
                    embeddings=vectors[start : start + BATCH],
                    documents=[record_texts[i] for i in chunk],
                    metadatas=[{"actor_id": f"u{actors[i]}"} for i in chunk],
                )

        chroma_ingest = timed(ingest_chroma)
        chroma_latencies, chroma_recalls = [], []
        for actor, query, truth in zip(query_actors, query_vectors, exact, strict=True):
            started = time.perf_counter()
            found = collection.query(query_embeddings=[query], n_results=10, where={"actor_id": f"u{actor}"})
            chroma_latencies.append(time.perf_counter() - started)
            chroma_recalls.append(len({int(i) for i in found["ids"][0]} & truth) / 10)

        def chroma_e2e() -> None:
            embedded = accelerator.embed(texts[:E2E_RECORDS], tenant="bench").vectors
            collection.add(
                ids=[f"e2e{i}" for i in range(E2E_RECORDS)],
                embeddings=embedded,
                documents=texts[:E2E_RECORDS],
                metadatas=[{"actor_id": "e2e"}] * E2E_RECORDS,
            )

        chroma_e2e_s = timed(chroma_e2e)
    ours_p50, chroma_p50 = percentile(latencies, 50), percentile(chroma_latencies, 50)
    result.update(
        {
            "ingest_per_s": {"agentcore": round(size / ours_ingest), "chroma": round(size / chroma_ingest)},
            "ingest_e2e_per_s": {
                "agentcore": round(E2E_RECORDS / ours_e2e),
                "chroma": round(E2E_RECORDS / chroma_e2e_s),
            },
            "query_ms": {
                "agentcore": {"p50": round(ours_p50, 2), "p99": round(percentile(latencies, 99), 2)},
                "agentcore_hybrid": {"p50": round(percentile(hybrid, 50), 2), "p99": round(percentile(hybrid, 99), 2)},
                "chroma": {"p50": round(chroma_p50, 2), "p99": round(percentile(chroma_latencies, 99), 2)},
            },
            "recall@10": {
                "agentcore": round(statistics.mean(recalls), 4),
                "chroma": round(statistics.mean(chroma_recalls), 4),
            },
            "ingest_ratio": round(chroma_ingest / ours_ingest, 2),
            "query_p50_ratio": round(ours_p50 / chroma_p50, 3),
        }
    )
    print(json.dumps(result), file=sys.stderr)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated record counts")
    parser.add_argument("--queries", type=int, default=200, help="filtered queries per size")
    args = parser.parse_args()
    accelerator = Accelerator()
    texts, base = corpus(accelerator, 4000)
    sizes = [run_size(int(size), texts, base, args.queries, accelerator) for size in args.sizes.split(",")]
    print(
        json.dumps(
            {
                "bench": "memory",
                "peer": "chromadb 1.5.9 PersistentClient",
                "sizes": sizes,
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            }
        )
    )


if __name__ == "__main__":
    main()
