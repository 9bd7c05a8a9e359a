"""Embedding throughput: agentcore (onnxruntime fp32 and INT8) versus sentence-transformers (PyTorch CPU).

Same model files, same 1,024 texts of mixed length, same batch size and thread count, one process run.
Prints one JSON line: sentences/s for each, the ratios, fidelity (cosine to sentence-transformers' vectors)
and achieved GFLOP/s (analytical FLOP count of the padded batches actually run).

Needs the `bench` extra (`pip install torch==2.13.0 sentence-transformers`) and ../shared/data for the texts.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agentcore import Accelerator
from agentcore.accel.models.bert import BertConfig
from agentcore.accel.models.source import resolve_source

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
BATCH_SIZE = 32
REPEATS = 3


def mixed_texts(count: int = 1024) -> list[str]:
    """Short SICK sentences, medium τ-bench task instructions, and long concatenations (truncated at 256)."""
    sick = [line.split("\t")[1] for line in (SHARED / "sick" / "sick.tsv").read_text().splitlines()[1:]]
    tasks = [
        json.loads(line)["instruction"]
        for line in (SHARED / "tau_bench_retail" / "tasks_train.jsonl").read_text().splitlines()
    ]
    rng = np.random.default_rng(20261129)
    short = [sick[i] for i in rng.choice(len(sick), count // 2, replace=False)]
    medium = [tasks[i] for i in rng.choice(len(tasks), count * 3 // 8, replace=False)]
    long = [" ".join(tasks[j] for j in rng.choice(len(tasks), 3, replace=False)) for _ in range(count // 8)]
    texts = short + medium + long
    rng.shuffle(texts)  # type: ignore[arg-type]
    return texts


def encoder_flops(config: BertConfig, lengths: list[int]) -> float:
    """Multiply-adds x 2 of the encoder over the padded batches agentcore runs (sorted by length)."""
    hidden, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    ordered = sorted(lengths)
    total = 0.0
    for start in range(0, len(ordered), BATCH_SIZE):
        batch = ordered[start : start + BATCH_SIZE]
        tokens = len(batch) * max(batch)
        seq = max(batch)
        dense = 2 * tokens * (4 * hidden * hidden + 2 * hidden * inner)
        attention = 2 * 2 * tokens * seq * hidden  # QK^T and PV
        total += layers * (dense + attention)
    return total


def timed(run: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    run()  # warm-up: session creation, allocator, caches
    times, vectors = [], np.empty(0)
    for _ in range(REPEATS):
        started = time.perf_counter()
        vectors = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), vectors


def cosine_stats(ours: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    cosines = (ours * reference).sum(axis=1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(reference, axis=1))
    return float(cosines.mean()), float(cosines.min())


def main() -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    texts = mixed_texts()
    source = resolve_source()
    config = BertConfig.from_folder(source)

    reference_model = SentenceTransformer(str(source), device="cpu")

    def reference() -> np.ndarray:
        with torch.inference_mode():
            return reference_model.encode(
                texts, batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True
            )

    fp32 = Accelerator(variant="fp32", batch_size=BATCH_SIZE, threads=threads)
    int8 = Accelerator(variant="int8", batch_size=BATCH_SIZE, threads=threads)
    st_seconds, st_vectors = timed(reference)
    fp32_seconds, fp32_vectors = timed(lambda: fp32.embed(texts, tenant="bench").vectors)
    int8_seconds, int8_vectors = timed(lambda: int8.embed(texts, tenant="bench").vectors)

    lengths = fp32._encoder_tokenizer().encode(texts).lengths
    flops = encoder_flops(config, lengths)
    fp32_mean, fp32_min = cosine_stats(fp32_vectors, st_vectors)
    int8_mean, int8_min = cosine_stats(int8_vectors, st_vectors)
    result = {
        "bench": "embed_throughput",
        "machine": f"{platform.machine()} {platform.processor() or ''} {threads} threads".strip(),
        "texts": len(texts),
        "batch_size": BATCH_SIZE,
        "mean_tokens": round(float(np.mean(lengths)), 1),
        "sentence_transformers_per_s": round(len(texts) / st_seconds, 1),
        "agentcore_fp32_per_s": round(len(texts) / fp32_seconds, 1),
        "agentcore_int8_per_s": round(len(texts) / int8_seconds, 1),
        "fp32_ratio": round(st_seconds / fp32_seconds, 3),
        "int8_ratio": round(st_seconds / int8_seconds, 3),
        "fp32_cosine_mean": round(fp32_mean, 6),
        "fp32_cosine_min": round(fp32_min, 6),
        "int8_cosine_mean": round(int8_mean, 5),
        "int8_cosine_min": round(int8_min, 5),
        "model_gflop": round(flops / 1e9, 2),
        "fp32_gflop_per_s": round(flops / fp32_seconds / 1e9, 1),
        "int8_gop_per_s": round(flops / int8_seconds / 1e9, 1),
        "sentence_transformers_gflop_per_s": round(flops / st_seconds / 1e9, 1),
        "torch": torch.__version__,
    }
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
