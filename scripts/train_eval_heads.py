"""Train the evaluators' small task heads and export them to ONNX, with provenance and measured quality.

Run offline: ``.venv/bin/python scripts/train_eval_heads.py [--data ../shared/data]``. Writes
``evaluations/heads/<name>.onnx`` and ``evaluations/heads/heads.json``. Only permissively licensed, non-offensive
sets train a head (HaluEval: MIT; PandaLM: Apache-2.0); each is split in halves by question/instruction, the
head is fitted on the ``train`` half and its quality is measured on the ``test`` half.

A head is logistic regression in numpy on standardised features, exported as
``sigmoid((x - mean) / std @ w + b)`` with onnx's helper API; input ``features [n, k]``, output ``score [n]``.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from agentcore.evaluations import agreement, features
from agentcore.evaluations.builtin.safety import refusal_probability
from agentcore.evaluations.models import HEADS_DIR, Models

log = logging.getLogger("train_eval_heads")


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, l2: float = 1e-2, bias: bool = True, steps: int = 50
) -> tuple[np.ndarray, float]:
    """Newton's method for L2-regularised logistic regression on already standardised ``x``."""
    design = np.hstack([x, np.ones((len(x), 1))]) if bias else x
    weights = np.zeros(design.shape[1])
    penalty = l2 * np.eye(design.shape[1])
    if bias:
        penalty[-1, -1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-design @ weights))
        gradient = design.T @ (p - y) + penalty @ weights
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return (weights[:-1], float(weights[-1])) if bias else (weights, 0.0)


def export(name: str, mean: np.ndarray, std: np.ndarray, weights: np.ndarray, bias: float) -> Path:
    k = len(weights)
    nodes = [
        helper.make_node("Sub", ["features", "mean"], ["centred"]),
        helper.make_node("Div", ["centred", "std"], ["scaled"]),
        helper.make_node("MatMul", ["scaled", "weights"], ["logit2d"]),
        helper.make_node("Add", ["logit2d", "bias"], ["biased"]),
        helper.make_node("Sigmoid", ["biased"], ["probability"]),
        helper.make_node("Reshape", ["probability", "flat"], ["score"]),
    ]
    initialisers = [
        numpy_helper.from_array(mean.astype(np.float32), "mean"),
        numpy_helper.from_array(std.astype(np.float32), "std"),
        numpy_helper.from_array(weights.astype(np.float32).reshape(k, 1), "weights"),
        numpy_helper.from_array(np.array([bias], dtype=np.float32), "bias"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "flat"),
    ]
    graph = helper.make_graph(
        nodes,
        f"agentcore_{name}",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["n", k])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["n"])],
        initialisers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="agentcore")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = HEADS_DIR / f"{name}.onnx"
    onnx.save(model, path)
    return path


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x.mean(axis=0), np.where(x.std(axis=0) > 1e-6, x.std(axis=0), 1.0)


def predict(x: np.ndarray, mean: np.ndarray, std: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-(((x - mean) / std) @ weights + bias))))


Extractor = Callable[[dict[str, Any], Models], list[float]]


def train_classifier(
    name: str,
    rows_train: list[dict[str, Any]],
    rows_test: list[dict[str, Any]],
    extract: Extractor,
    label: Callable[[dict[str, Any]], bool],
    feature_names: tuple[str, ...],
    models: Models,
) -> dict[str, Any]:
    x_train = np.array([extract(row, models) for row in rows_train])
    y_train = np.array([label(row) for row in rows_train], dtype=np.float64)
    mean, std = standardise(x_train)
    weights, bias = fit_logistic((x_train - mean) / std, y_train)
    export(name, mean, std, weights, bias)
    x_test = np.array([extract(row, models) for row in rows_test])
    y_test = np.array([label(row) for row in rows_test])
    scores = predict(x_test, mean, std, weights, bias)
    quality = {
        "test_auroc": agreement.auroc(scores[y_test], scores[~y_test]),
        "test_accuracy_at_0.5": float(((scores >= 0.5) == y_test).mean()),
        "test_majority_baseline": float(max(y_test.mean(), 1 - y_test.mean())),
        "train_rows": len(rows_train),
        "test_rows": len(rows_test),
    }
    log.info("%s: %s", name, quality)
    return {
        "features": list(feature_names),
        "weights": weights.round(4).tolist(),
        "bias": round(bias, 4),
        "quality": quality,
    }


def train_pairwise(
    name: str, train: list[dict[str, Any]], test: list[dict[str, Any]], models: Models
) -> dict[str, Any]:
    def rows(pairs: list[dict[str, Any]], key: str) -> np.ndarray:
        return np.array(
            [
                features.helpfulness_features(
                    pair["request"], pair[key], refusal_probability(pair[key], models)[0], models
                )
                for pair in pairs
            ]
        )

    better, worse = rows(train, "better"), rows(train, "worse")
    mean, std = standardise(np.vstack([better, worse]))
    diff = (better - worse) / std
    x = np.vstack([diff, -diff])
    y = np.concatenate([np.ones(len(diff)), np.zeros(len(diff))])
    weights, _ = fit_logistic(x, y, bias=False)
    export(name, mean, std, weights, 0.0)
    test_better, test_worse = rows(test, "better"), rows(test, "worse")
    agree = predict(test_better, mean, std, weights, 0.0) > predict(test_worse, mean, std, weights, 0.0)
    quality = {"test_pairwise_agreement": float(agree.mean()), "train_pairs": len(train), "test_pairs": len(test)}
    log.info("%s: %s", name, quality)
    return {
        "features": list(features.HELPFULNESS_FEATURES),
        "weights": weights.round(4).tolist(),
        "bias": 0.0,
        "quality": quality,
    }


def fit_relevance_map(data: Path, models: Models) -> dict[str, float]:
    """ResponseRelevance's ``sigmoid(slope * (cosine - midpoint))``, by least squares on a grid.

    Targets: SummEval's expert relevance (1-5 scaled to 0-1) of each summary against its own article, on the train
    half by document, plus each summary against the next article in id order (relevance 0), so the map also knows
    what off-topic looks like. Prints the constants to paste into ``evaluations/builtin/quality.py``.
    """
    documents = {d["doc_id"]: d["source"] for d in agreement.read_jsonl(data / "summeval" / "summeval_documents.jsonl")}
    rows = [
        r
        for r in agreement.read_jsonl(data / "summeval" / "summeval_summaries.jsonl")
        if agreement.split_of(r["doc_id"]) == "train"
    ]
    ids = sorted(documents)
    others = [ids[(ids.index(r["doc_id"]) + 1) % len(ids)] for r in rows]
    summaries = models.embed([r["summary"] for r in rows])
    articles = dict(zip(ids, models.embed([documents[i] for i in ids]), strict=True))
    cosine = np.concatenate(
        [
            np.einsum("ij,ij->i", summaries, np.stack([articles[r["doc_id"]] for r in rows])),
            np.einsum("ij,ij->i", summaries, np.stack([articles[o] for o in others])),
        ]
    )
    target = np.concatenate([(np.array([r["relevance"] for r in rows]) - 1.0) / 4.0, np.zeros(len(rows))])
    slopes, midpoints = np.arange(1.0, 20.01, 0.5), np.arange(0.20, 0.95, 0.01)
    error = [
        (float(np.square(1.0 / (1.0 + np.exp(-s * (cosine - m))) - target).sum()), float(s), float(m))
        for s in slopes
        for m in midpoints
    ]
    loss, slope, midpoint = min(error)
    return {"slope": slope, "midpoint": round(midpoint, 2), "squared_error": round(loss, 3), "n": len(target)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--only", nargs="*", help="retrain only these heads (others keep their manifest entry)")
    parser.add_argument(
        "--relevance-map", action="store_true", help="fit and print ResponseRelevance's map instead of training heads"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    models = Models()
    if args.relevance_map:
        log.info("ResponseRelevance map: %s", json.dumps(fit_relevance_map(args.data, models)))
        return
    qa_train, qa_test = agreement.halueval_qa(args.data, "train"), agreement.halueval_qa(args.data, "test")
    trainers = {
        "faithfulness": lambda: train_classifier(
            "faithfulness",
            qa_train,
            qa_test,
            lambda row, m: features.grounding_features(row["answer"], row["question"], [row["knowledge"]], m),
            lambda row: row["label"] == "correct",
            features.GROUNDING_FEATURES,
            models,
        ),
        "correctness_reference": lambda: train_classifier(
            "correctness_reference",
            qa_train,
            qa_test,
            lambda row, m: features.reference_features(row["answer"], row["right_answer"], row["question"], m),
            lambda row: row["label"] == "correct",
            features.REFERENCE_FEATURES,
            models,
        ),
        "helpfulness": lambda: train_pairwise(
            "helpfulness",
            agreement.pandalm_pairs(args.data, "train"),
            agreement.pandalm_pairs(args.data, "test"),
            models,
        ),
    }
    provenance = {
        "faithfulness": "HaluEval QA (RUCAIBox/HaluEval@b7253db, MIT): answer supported by knowledge; "
        "train half by question",
        "correctness_reference": "HaluEval QA (MIT): answer vs right_answer; train half by question",
        "helpfulness": "PandaLM human test set (WeOpenML/PandaLM@3871806, Apache-2.0): majority preference, "
        "ties dropped; train half by instruction",
    }
    manifest_path = HEADS_DIR / "heads.json"
    heads = json.loads(manifest_path.read_text(encoding="utf-8"))["heads"] if manifest_path.is_file() else {}
    for name in args.only or trainers:
        heads[name] = {**trainers[name](), "training_data": provenance[name]}
    manifest = {
        "trainer": "scripts/train_eval_heads.py",
        "encoder": "all-MiniLM-L6-v2 (fp32, via accel)",
        "heads": heads,
    }
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
