"""Throughput of all built-in evaluators on 1,000 traces, and how much of it is model inference.

Builds 1,000 single-turn traces from real data (HaluEval QA: question, answer, knowledge; and a tool call per trace
from BFCL), runs every built-in evaluator through ``evaluate`` with a fresh cache, and compares the evaluators'
embedding throughput with raw ``Accelerator.embed`` on exactly the texts they embedded. Prints ONE JSON line.

    .venv/bin/python bench/eval_throughput.py [--traces 1000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agentcore import Accelerator
from agentcore.evaluations import Session, Trace, agreement, create_evaluator, evaluate, evaluator_classes
from agentcore.evaluations.base import targets_for
from agentcore.evaluations.models import Models


def build_sessions(data: Path, count: int) -> list[Session]:
    qa = agreement.halueval_qa(data)
    calls = [case for case in agreement.bfcl_cases(data) if case[0] == "ground_truth"]
    sessions = []
    for index in range(count):
        row = qa[index % len(qa)]
        _, tool_session, _ = calls[index % len(calls)]
        tool_turn = tool_session.traces[0]
        turn = Trace(
            id=f"t{index}",
            input=row["question"],
            output=row["answer"],
            context=[row["knowledge"]],
            tools=tool_turn.tools,
            spans=tool_turn.spans,
            reference=tool_turn.reference,
        )
        sessions.append(Session(id=f"s{index}", traces=[turn]))
    return sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--traces", type=int, default=1000)
    args = parser.parse_args()
    sessions = build_sessions(args.data, args.traces)
    accelerator = Accelerator()
    accelerator.embed(["warm up"])
    evaluators = [create_evaluator(evaluator_id) for evaluator_id in evaluator_classes()]
    models = Models(accelerator, tenant="bench")
    started = time.perf_counter()
    results = evaluate(sessions, evaluators, models=models)
    total = time.perf_counter() - started
    texts = sorted({text for e in evaluators for target in targets_for(e.level, sessions) for text in e.texts(target)})
    embed_seconds = sum(receipt.cpu_seconds for receipt in models.embed_receipts)
    head_seconds = sum(receipt.cpu_seconds for receipts in models.head_receipts.values() for receipt in receipts)
    raw_started = time.perf_counter()
    accelerator.embed(texts)
    raw = time.perf_counter() - raw_started
    print(
        json.dumps(
            {
                "bench": "eval_throughput",
                "traces": len(sessions),
                "evaluators": len(evaluators),
                "results": len(results),
                "seconds": round(total, 2),
                "traces_per_second": round(len(sessions) / total, 1),
                "texts_embedded": len(texts),
                "model_inference_seconds": round(embed_seconds + head_seconds, 2),
                "model_inference_share": round((embed_seconds + head_seconds) / total, 3),
                "evaluator_embed_texts_per_second": round(len(texts) / embed_seconds, 1),
                "raw_accelerator_embed_texts_per_second": round(len(texts) / raw, 1),
                "evaluator_vs_raw_embed_throughput": round(raw / embed_seconds, 3),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
