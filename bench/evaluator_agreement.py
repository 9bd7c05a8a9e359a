"""Agreement of agentcore's evaluators with human (or reference) labels on the public dev data.

Runs every evaluator through the real path (``evaluate`` -> accel) on the labelled sets in ../shared/data and
prints ONE JSON line of metrics (see docs/evaluations.md for what each means). Trained heads are measured on the
held-out half of their training set only. ``--every N`` keeps every N-th row of the large sets for a quick run.

    .venv/bin/python bench/evaluator_agreement.py [--data ../shared/data] [--every 1]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agentcore.evaluations import Session, Trace, TraceReference, agreement, create_evaluator, evaluate
from agentcore.evaluations.builtin.safety import harm_probability, refusal_probability
from agentcore.evaluations.instruction_parser import parse_instructions
from agentcore.evaluations.instructions import check_instruction
from agentcore.evaluations.models import Models
from agentcore.evaluations.text import words

log = logging.getLogger("evaluator_agreement")


def _score(evaluator_id: str, turns: list[Trace], models: Models) -> list[float]:
    """Raw scores of one evaluator on single-turn sessions (one per trace, in order)."""
    return _score_sessions(evaluator_id, [Session(id=f"s{i}", traces=[turn]) for i, turn in enumerate(turns)], models)


def _score_sessions(evaluator_id: str, sessions: list[Session], models: Models) -> list[float]:
    """One raw score per session (of its one result), in order."""
    results = evaluate(sessions, [create_evaluator(evaluator_id)], models=models)
    by_session = {result.session_id: result.raw_score for result in results}
    return [by_session[session.id] for session in sessions]


def _auroc(scores: list[float], positive: list[bool]) -> float:
    """AUROC of ``scores`` separating the rows flagged ``positive`` from the rest."""
    pos = [s for s, flag in zip(scores, positive, strict=True) if flag]
    neg = [s for s, flag in zip(scores, positive, strict=True) if not flag]
    return round(agreement.auroc(pos, neg), 4)


def _share(flags: list[bool]) -> float:
    return round(float(np.mean(flags)), 4)


def _follows_all(response: str, prompt: str, instructions: list[tuple[str, dict[str, Any]]]) -> bool:
    return all(check_instruction(i, response, kwargs, prompt) for i, kwargs in instructions)


def _pairwise(better: list[float], worse: list[float]) -> float:
    """Share of pairs where the preferred item scores higher (ties count half)."""
    wins = sum(1.0 if b > w else 0.5 if b == w else 0.0 for b, w in zip(better, worse, strict=True))
    return round(wins / len(better), 4)


def _macro_f1(predicted: list[bool], gold: list[bool]) -> float:
    scores = []
    for positive in (True, False):
        tp = sum(p == positive and g == positive for p, g in zip(predicted, gold, strict=True))
        fp = sum(p == positive and g != positive for p, g in zip(predicted, gold, strict=True))
        fn = sum(p != positive and g == positive for p, g in zip(predicted, gold, strict=True))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return round(float(np.mean(scores)), 4)


def refusal(data: Path, models: Models, every: int) -> dict[str, Any]:
    rows = list(agreement.read_jsonl(data / "xstest" / "xstest_completions.jsonl"))[::every]
    scores = _score("Builtin.Refusal", [Trace(id="t", input=r["prompt"], output=r["completion"]) for r in rows], models)
    predicted = [score >= 0.5 for score in scores]
    gold = [r["final_label"] != "1_full_compliance" for r in rows]
    full = [i for i, r in enumerate(rows) if r["final_label"] != "3_partial_refusal"]
    return {
        "n": len(rows),
        "accuracy": round(float(np.mean([p == g for p, g in zip(predicted, gold, strict=True)])), 4),
        "macro_f1": _macro_f1(predicted, gold),
        "accuracy_without_partial": round(float(np.mean([predicted[i] == gold[i] for i in full])), 4),
        "partial_refusals_caught": _share(
            [p for p, r in zip(predicted, rows, strict=True) if r["final_label"] == "3_partial_refusal"]
        ),
    }


def instruction_following(data: Path, models: Models, every: int) -> dict[str, Any]:
    rows = list(agreement.read_jsonl(data / "ifeval" / "ifeval_gpt4_responses.jsonl"))
    pairs = [
        (check_instruction(i, r["response"], kw, r["prompt"]), verdict)
        for r in rows
        for i, kw, verdict in zip(r["instruction_id_list"], r["kwargs"], r["checker_strict_follow_list"], strict=True)
    ]
    given = [
        _follows_all(r["response"], r["prompt"], list(zip(r["instruction_id_list"], r["kwargs"], strict=True)))
        for r in rows
    ]
    found = [[(x.id, x.kwargs) for x in parse_instructions(r["prompt"])] for r in rows]
    parsed = [
        _follows_all(r["response"], r["prompt"], instructions) for r, instructions in zip(rows, found, strict=True)
    ]
    gold = [r["checker_strict_follow_all"] for r in rows]
    # a prompt with no instruction the parser reads is not applicable: the evaluator skips it, never passes it
    right = [p == g for p, g, instructions in zip(parsed, gold, found, strict=True) if instructions]
    return {
        "n_prompts": len(rows),
        "instruction_accuracy": round(float(np.mean([a == b for a, b in pairs])), 4),
        "prompt_accuracy_given_instructions": round(
            float(np.mean([a == b for a, b in zip(given, gold, strict=True)])), 4
        ),
        "parsed_coverage": _share([bool(instructions) for instructions in found]),
        "prompt_accuracy_parsed_judged": _share(right),
        "prompt_accuracy_parsed_not_applicable_as_wrong": round(sum(right) / len(rows), 4),
    }


def halueval(data: Path, models: Models, every: int) -> dict[str, Any]:
    rows = agreement.halueval_qa(data, "test")
    right = [r["label"] == "correct" for r in rows]
    grounded = [Trace(id="t", input=r["question"], output=r["answer"], context=[r["knowledge"]]) for r in rows]
    faithful = _score("Builtin.Faithfulness", grounded, models)
    correct = _score(
        "Builtin.Correctness",
        [
            t.model_copy(update={"context": [], "reference": TraceReference(expected_response=r["right_answer"])})
            for t, r in zip(grounded, rows, strict=True)
        ],
        models,
    )
    general = agreement.halueval_general(data, "test")[::every]
    open_sessions = [
        Session(id=f"s{i}", traces=[Trace(id="t", input=r["user_query"], output=r["chatgpt_response"])])
        for i, r in enumerate(general)
    ]
    open_results = evaluate(open_sessions, [create_evaluator("Builtin.Correctness")], models=models)

    return {
        "qa_test_rows": len(rows),
        "faithfulness_auroc": _auroc(faithful, right),
        "correctness_with_reference_auroc": _auroc(correct, right),
        "general_rows": len(general),
        # no reference and no context: Correctness abstains (the open-domain head it replaced had AUROC 0.56)
        "general_correctness_coverage": round(sum(r.judged for r in open_results) / max(len(open_results), 1), 4),
        "general_faithfulness": "not applicable: the general set has no context documents",
    }


def summeval(data: Path, models: Models, every: int) -> dict[str, Any]:
    documents = {d["doc_id"]: d for d in agreement.read_jsonl(data / "summeval" / "summeval_documents.jsonl")}
    rows = list(agreement.read_jsonl(data / "summeval" / "summeval_summaries.jsonl"))[::every]
    coherence = _score("Builtin.Coherence", [Trace(id="t", output=r["summary"]) for r in rows], models)
    sources = [documents[r["doc_id"]]["source"] for r in rows]
    faithful = _score(
        "Builtin.Faithfulness",
        [Trace(id="t", output=r["summary"], context=[d]) for r, d in zip(rows, sources, strict=True)],
        models,
    )
    relevance = _score(
        "Builtin.ResponseRelevance",
        [Trace(id="t", input=d, output=r["summary"]) for r, d in zip(rows, sources, strict=True)],
        models,
    )
    return {
        "n": len(rows),
        "coherence_spearman": round(agreement.spearman(coherence, [r["coherence"] for r in rows]), 4),
        "faithfulness_vs_consistency_spearman": round(
            agreement.spearman(faithful, [r["consistency"] for r in rows]), 4
        ),
        "relevance_spearman": round(agreement.spearman(relevance, [r["relevance"] for r in rows]), 4),
    }


def stereotyping(data: Path, models: Models, every: int) -> dict[str, Any]:
    pairs = agreement.read_csv(data / "crows_pairs" / "crows_pairs.csv")[::every]
    more = _score("Builtin.Stereotyping", [Trace(id="t", output=p["sent_more"]) for p in pairs], models)
    less = _score("Builtin.Stereotyping", [Trace(id="t", output=p["sent_less"]) for p in pairs], models)
    by_type: dict[str, list[tuple[float, float]]] = {}
    for pair, m, s in zip(pairs, more, less, strict=True):
        by_type.setdefault(pair["bias_type"], []).append((s, m))
    toxigen = list(agreement.read_jsonl(data / "toxigen_statements" / "toxigen_statements.jsonl"))
    scores = _score("Builtin.Stereotyping", [Trace(id="t", output=r["text"]) for r in toxigen], models)
    hate = [1 - s for s, r in zip(scores, toxigen, strict=True) if r["label"] == "hate"]
    neutral = [1 - s for s, r in zip(scores, toxigen, strict=True) if r["label"] != "hate"]
    return {
        "crows_pairs_n": len(pairs),
        "crows_pairs_more_stereotyping_scores_worse": _pairwise(less, more),
        "crows_pairs_by_bias_type": {
            k: _pairwise([a for a, _ in v], [b for _, b in v]) for k, v in sorted(by_type.items())
        },
        "toxigen_auroc": round(agreement.auroc(hate, neutral), 4),
    }


def harmfulness(data: Path, models: Models, every: int) -> dict[str, Any]:
    pairs = list(agreement.read_jsonl(data / "hh_rlhf_harmless" / "hh_harmless_pairs.jsonl"))[::every]

    def hh(key: str, last_only: bool) -> list[float]:
        sessions = [agreement.hh_session(pair, key, f"s{i}") for i, pair in enumerate(pairs)]
        if last_only:
            sessions = [session.model_copy(update={"traces": session.traces[-1:]}) for session in sessions]
        return _score_sessions("Builtin.Harmfulness", sessions, models)  # the last turn of each is under test

    def signals(key: str) -> dict[str, list[float]]:
        """Single signals of the reply under test, each signed so that more of it should mean less harmful."""
        turns = [agreement.hh_session(pair, key, "s").traces[-1] for pair in pairs]
        similarity = [float(np.dot(*models.embed([t.input, t.output]))) for t in turns]
        return {
            "refuses_more": [refusal_probability(t.output, models)[0] for t in turns],
            "less_harmful_words_and_prototypes": [1 - harm_probability(t.output, models)[0] for t in turns],
            "less_similar_to_the_request": [-s for s in similarity],
            "shorter": [-len(words(t.output)) for t in turns],
        }

    chosen, rejected = hh("chosen_response", False), hh("rejected_response", False)
    chosen_alone, rejected_alone = hh("chosen_response", True), hh("rejected_response", True)
    chosen_signals, rejected_signals = signals("chosen_response"), signals("rejected_response")
    tweets = agreement.read_csv(data / "davidson_hate_offensive" / "davidson_labeled.csv")[::every]
    tweet_scores = _score("Builtin.Harmfulness", [Trace(id="t", output=r["tweet"]) for r in tweets], models)
    toxigen = list(agreement.read_jsonl(data / "toxigen_statements" / "toxigen_statements.jsonl"))
    tox = _score("Builtin.Harmfulness", [Trace(id="t", output=r["text"]) for r in toxigen], models)

    def harm(scores: list[float], flags: list[bool]) -> float:
        return _auroc([1 - s for s in scores], flags)

    return {
        "hh_pairs": len(pairs),
        "hh_less_harmful_scores_better": _pairwise(chosen, rejected),
        "hh_less_harmful_scores_better_last_turn_alone": _pairwise(chosen_alone, rejected_alone),
        # why the score cannot rank these pairs: no single signal it could build on reaches 0.6
        "hh_single_signal_agreement": {
            name: _pairwise(chosen_signals[name], rejected_signals[name]) for name in sorted(chosen_signals)
        },
        "davidson_n": len(tweets),
        "davidson_hate_or_offensive_vs_neither_auroc": harm(tweet_scores, [r["class"] != "2" for r in tweets]),
        "davidson_hate_vs_offensive_auroc": harm(
            [s for s, r in zip(tweet_scores, tweets, strict=True) if r["class"] != "2"],
            [r["class"] == "0" for r in tweets if r["class"] != "2"],
        ),
        "toxigen_hate_vs_neutral_auroc": harm(tox, [r["label"] == "hate" for r in toxigen]),
    }


def helpfulness(data: Path, models: Models, every: int) -> dict[str, Any]:
    def pairwise(pairs: list[dict[str, Any]]) -> float:
        better = _score(
            "Builtin.Helpfulness", [Trace(id="t", input=p["request"], output=p["better"]) for p in pairs], models
        )
        worse = _score(
            "Builtin.Helpfulness", [Trace(id="t", input=p["request"], output=p["worse"]) for p in pairs], models
        )
        return _pairwise(better, worse)

    panda = agreement.pandalm_pairs(data, "test")
    tulu_pairs = agreement.tulu_pairs(data)
    tulu = list(agreement.read_jsonl(data / "tulu1_human_eval" / "tulu1_annotations.jsonl"))
    singles = [
        (r["prompt"], r[f"completion_{side}"], r[f"completion_{side}_is_acceptable"] == "yes")
        for r in tulu
        for side in "ab"
    ]
    accept = _score("Builtin.Helpfulness", [Trace(id="t", input=q, output=c) for q, c, _ in singles], models)
    groups: dict[str, list[dict[str, Any]]] = {}
    for pair in agreement.llmbar_pairs(data):
        groups.setdefault(pair["group"], []).append(pair)
    return {
        "pandalm_test_pairs": len(panda),
        "pandalm_pairwise_agreement": pairwise(panda),
        "tulu_pairs": len(tulu_pairs),
        "tulu_pairwise_agreement": pairwise(tulu_pairs),
        "tulu_acceptable_auroc": round(
            agreement.auroc(
                [s for s, (_, _, ok) in zip(accept, singles, strict=True) if ok],
                [s for s, (_, _, ok) in zip(accept, singles, strict=True) if not ok],
            ),
            4,
        ),
        "llmbar_pairwise_agreement": {group: pairwise(items) for group, items in sorted(groups.items())},
    }


def conciseness(data: Path, models: Models, every: int) -> dict[str, Any]:
    rows = [r for r in agreement.read_jsonl(data / "llmbar" / "llmbar_pairs.jsonl")]
    good = [r["output_1"] if r["label"] == 1 else r["output_2"] for r in rows]
    bad = [r["output_2"] if r["label"] == 1 else r["output_1"] for r in rows]
    good_s = _score(
        "Builtin.Conciseness",
        [Trace(id="t", input=r["input"], output=g) for r, g in zip(rows, good, strict=True)],
        models,
    )
    bad_s = _score(
        "Builtin.Conciseness",
        [Trace(id="t", input=r["input"], output=b) for r, b in zip(rows, bad, strict=True)],
        models,
    )
    adversarial = [i for i, r in enumerate(rows) if "Adversarial" in r["subset"]]
    shorter_good = [len(g) < len(b) for g, b in zip(good, bad, strict=True)]
    return {
        "human_conciseness_labels": "none exist publicly; these are instruction-following preferences (LLMBar)",
        "llmbar_adversarial_pairs": len(adversarial),
        "llmbar_adversarial_preferred_scores_more_concise": _pairwise(
            [good_s[i] for i in adversarial], [bad_s[i] for i in adversarial]
        ),
        "humans_prefer_shorter_output": round(float(np.mean(shorter_good)), 4),
        "conciseness_prefers_shorter_output": _pairwise(
            [g if short else b for g, b, short in zip(good_s, bad_s, shorter_good, strict=True)],
            [b if short else g for g, b, short in zip(good_s, bad_s, shorter_good, strict=True)],
        ),
    }


def tools(data: Path, models: Models, every: int) -> dict[str, Any]:
    cases = agreement.bfcl_cases(data, every=every)
    out: dict[str, Any] = {"bfcl_cases": len(cases)}
    for evaluator_id, keep in (
        ("Builtin.ToolSelectionAccuracy", {"ground_truth", "wrong_function", "irrelevant_call"}),
        (
            "Builtin.ToolParameterAccuracy",
            {"ground_truth", "missing_argument", "extra_argument", "wrong_type", "wrong_value"},
        ),
    ):
        chosen = [c for c in cases if c[0] in keep]
        results = evaluate([s for _, s, _ in chosen], [create_evaluator(evaluator_id)], models=models)
        right = Counter(m for (m, _, ok), r in zip(chosen, results, strict=True) if r.passed == ok)
        total = Counter(m for m, _, _ in chosen)
        out[evaluator_id] = {
            "accuracy": round(sum(right.values()) / len(chosen), 4),
            **{m: round(right[m] / total[m], 4) for m in sorted(total)},
        }
    unreferenced = [
        (m, s.model_copy(update={"traces": [s.traces[0].model_copy(update={"reference": None})]}), ok)
        for m, s, ok in cases
        if m in ("ground_truth", "wrong_function")
    ]
    results = evaluate(
        [s for _, s, _ in unreferenced], [create_evaluator("Builtin.ToolSelectionAccuracy")], models=models
    )
    out["selection_without_reference_accuracy"] = _share(
        [r.passed == ok for (_, _, ok), r in zip(unreferenced, results, strict=True)]
    )
    return out


def goals(data: Path, models: Models, every: int) -> dict[str, Any]:
    cases = agreement.tau_bench_cases(data, "test") + agreement.tau_bench_cases(data, "dev")
    results = evaluate([s for _, s, _ in cases], [create_evaluator("Builtin.GoalSuccessRate")], models=models)
    right = Counter(m for (m, _, ok), r in zip(cases, results, strict=True) if r.passed == ok)
    total = Counter(m for m, _, _ in cases)
    trajectory = {}
    for evaluator_id in (
        "Builtin.TrajectoryExactOrderMatch",
        "Builtin.TrajectoryInOrderMatch",
        "Builtin.TrajectoryAnyOrderMatch",
    ):
        chosen = [(m, s, ok) for m, s, ok in cases if m in ("ground_truth", "dropped_action")]
        rs = evaluate([s for _, s, _ in chosen], [create_evaluator(evaluator_id)], models=models)
        trajectory[evaluator_id] = round(
            float(np.mean([r.passed == ok for (_, _, ok), r in zip(chosen, rs, strict=True)])), 4
        )
    return {
        "tau_sessions": len(cases),
        "goal_success_accuracy": round(sum(right.values()) / len(cases), 4),
        **{f"goal_success_{m}": round(right[m] / total[m], 4) for m in sorted(total)},
        "trajectory_accuracy_ground_truth_vs_dropped": trajectory,
    }


MEASURES: dict[str, Callable[[Path, Models, int], dict[str, Any]]] = {
    "refusal_xstest": refusal,
    "instruction_following_ifeval": instruction_following,
    "halueval": halueval,
    "summeval": summeval,
    "stereotyping": stereotyping,
    "harmfulness": harmfulness,
    "helpfulness": helpfulness,
    "conciseness_llmbar": conciseness,
    "tool_calls_bfcl": tools,
    "goals_tau_bench": goals,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--every", type=int, default=1, help="keep every N-th row of the large sets")
    parser.add_argument("--only", nargs="*", choices=sorted(MEASURES), help="run only these measures")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    models = Models(tenant="bench")
    started = time.perf_counter()
    report: dict[str, Any] = {"bench": "evaluator_agreement", "every": args.every}
    for name in args.only or MEASURES:
        report[name] = MEASURES[name](args.data, models, args.every)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
