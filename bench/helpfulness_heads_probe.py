"""Why Helpfulness misses its LLMBar goals: candidate heads, fitted on training halves, measured on everything else.

The shipped head is fitted on PandaLM's train half (``scripts/train_eval_heads.py``). Each candidate here is fitted
on the train halves named in ``CANDIDATES`` (PandaLM by instruction; LLMBar's own Natural and Adversarial subsets,
MIT, by instruction) and measured as pairwise agreement on the held-out halves and on the sets no candidate sees
(Tülu, and LLMBar's MT-Bench, FairEval and LLMEval² re-releases). Features: the shipped head's, plus the two
length-aware ones that should help LLMBar (request-word coverage; words over the Conciseness length budget).
Pairwise candidates add interactions of each feature difference with the pair's similarity or length gap, so
they can only judge two replies side by side. Prints ONE JSON line: agreement per candidate and set, goal 0.65.

    .venv/bin/python bench/helpfulness_heads_probe.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from train_eval_heads import fit_logistic, standardise

from agentcore.evaluations import agreement, features
from agentcore.evaluations.builtin.quality import length_budget
from agentcore.evaluations.builtin.safety import refusal_probability
from agentcore.evaluations.models import Models
from agentcore.evaluations.text import content_words, coverage, words

GOAL = 0.65
SHIPPED = len(features.HELPFULNESS_FEATURES)
TRAIN = ("pandalm_train", "Natural_train", "Adversarial_train")
#: name -> (feature columns, pair interactions, training halves)
CANDIDATES: dict[str, tuple[int, tuple[str, ...], tuple[str, ...]]] = {
    "shipped_features_pandalm": (SHIPPED, (), TRAIN[:1]),
    "length_aware_pandalm": (SHIPPED + 2, (), TRAIN[:1]),
    "shipped_features_pandalm_llmbar": (SHIPPED, (), TRAIN),
    "length_aware_pandalm_llmbar": (SHIPPED + 2, (), TRAIN),
    "pairwise_similarity_gap_pandalm_llmbar": (SHIPPED + 2, ("similarity",), TRAIN),
    "pairwise_length_gap_pandalm_llmbar": (SHIPPED + 2, ("length",), TRAIN),
}


def reply_features(request: str, reply: str, models: Models) -> list[float]:
    shipped = features.helpfulness_features(request, reply, refusal_probability(reply, models)[0], models)
    over_budget = max(0.0, math.log((1 + len(words(reply))) / length_budget(request)))
    return [*shipped, coverage(content_words(request), content_words(reply)), over_budget]


def pair_sets(data: Path) -> dict[str, list[dict[str, Any]]]:
    sets: dict[str, list[dict[str, Any]]] = {
        f"pandalm_{split}": agreement.pandalm_pairs(data, split) for split in ("train", "test")
    }
    sets["tulu"] = agreement.tulu_pairs(data)
    for pair in agreement.llmbar_pairs(data):
        trained = pair["group"] in ("Natural", "Adversarial")
        sets.setdefault(f"{pair['group']}_{pair['split']}" if trained else pair["group"], []).append(pair)
    return sets


def design(better: np.ndarray, worse: np.ndarray, std: np.ndarray, interactions: tuple[str, ...]) -> np.ndarray:
    """Antisymmetric pair features: swapping the replies negates every column."""
    diff = (better - worse) / std
    gaps = {"similarity": 0, "length": 1}
    return np.hstack([diff, *(diff * np.abs(diff[:, gaps[name]])[:, None] for name in interactions)])


def agreement_of(scores: np.ndarray) -> float:
    return round(float(np.mean(np.where(scores == 0, 0.5, scores > 0))), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    models = Models(tenant="bench")
    started = time.perf_counter()
    rows = {
        name: tuple(
            np.array([reply_features(p["request"], p[side], models) for p in pairs]) for side in ("better", "worse")
        )
        for name, pairs in pair_sets(args.data).items()
    }
    report: dict[str, Any] = {
        "bench": "helpfulness_heads_probe",
        "goal": GOAL,
        "pairs": {k: len(v[0]) for k, v in rows.items()},
    }
    # column 1 is log_answer_words: how often the humans preferred the longer reply
    report["longer_preferred"] = {k: agreement_of(b[:, 1] - w[:, 1]) for k, (b, w) in rows.items()}
    for name, (width, interactions, train) in CANDIDATES.items():
        _, std = standardise(np.vstack([rows[t][side][:, :width] for t in train for side in (0, 1)]))
        x = np.vstack([design(rows[t][0][:, :width], rows[t][1][:, :width], std, interactions) for t in train])
        weights, _ = fit_logistic(np.vstack([x, -x]), np.r_[np.ones(len(x)), np.zeros(len(x))], bias=False)
        held_out = {k: v for k, v in rows.items() if k not in train}
        measured = {
            k: agreement_of(design(b[:, :width], w[:, :width], std, interactions) @ weights)
            for k, (b, w) in held_out.items()
        }
        report[name] = {**measured, "sets_below_goal": sorted(k for k, v in measured.items() if v < GOAL)}
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
