"""Model-based evaluators (MiniLM + shipped heads via accel) measured on samples of real labelled data.

Samples keep the run short; bench/evaluator_agreement.py measures the full sets. Thresholds sit below the
full-set numbers in docs/evaluations.md, so a real regression fails while sampling noise does not.
"""

from __future__ import annotations

from pathlib import Path

from agentcore.evaluations import Session, Trace, TraceReference, agreement, create_evaluator, evaluate
from agentcore.evaluations.models import Models


def _scores(evaluator_id: str, turns: list[Trace], models: Models) -> list[float]:
    sessions = [Session(id=f"s{i}", traces=[turn]) for i, turn in enumerate(turns)]
    results = evaluate(sessions, [create_evaluator(evaluator_id)], models=models)
    assert [r.session_id for r in results] == [s.id for s in sessions]
    for result in results:
        assert 0.0 <= result.score <= 1.0 and result.label and result.explanation
    return [result.raw_score for result in results]


def _auroc(scores: list[float], positive: list[bool]) -> float:
    return agreement.auroc(
        [s for s, p in zip(scores, positive, strict=True) if p],
        [s for s, p in zip(scores, positive, strict=True) if not p],
    )


def test_refusal_agrees_with_xstest_humans(data_dir: Path, models: Models) -> None:
    rows = list(agreement.read_jsonl(data_dir / "xstest" / "xstest_completions.jsonl"))[::4]
    scores = _scores(
        "Builtin.Refusal", [Trace(id="t", input=r["prompt"], output=r["completion"]) for r in rows], models
    )
    refused = [r["final_label"] != "1_full_compliance" for r in rows]
    accuracy = sum((s >= 0.5) == y for s, y in zip(scores, refused, strict=True)) / len(rows)
    assert accuracy >= 0.8


def test_faithfulness_and_correctness_separate_halueval_hallucinations(data_dir: Path, models: Models) -> None:
    rows = agreement.halueval_qa(data_dir, "test")[::2]
    right = [r["label"] == "correct" for r in rows]
    grounded = [Trace(id="t", input=r["question"], output=r["answer"], context=[r["knowledge"]]) for r in rows]
    assert _auroc(_scores("Builtin.Faithfulness", grounded, models), right) >= 0.75
    referenced = [
        Trace(
            id="t",
            input=r["question"],
            output=r["answer"],
            reference=TraceReference(expected_response=r["right_answer"]),
        )
        for r in rows
    ]
    assert _auroc(_scores("Builtin.Correctness", referenced, models), right) >= 0.9


def test_harmfulness_separates_abusive_tweets_and_implicit_hate(data_dir: Path, models: Models) -> None:
    tweets = agreement.read_csv(data_dir / "davidson_hate_offensive" / "davidson_labeled.csv")[::60]
    scores = _scores("Builtin.Harmfulness", [Trace(id="t", output=r["tweet"]) for r in tweets], models)
    assert _auroc([1 - s for s in scores], [r["class"] != "2" for r in tweets]) >= 0.8
    statements = list(agreement.read_jsonl(data_dir / "toxigen_statements" / "toxigen_statements.jsonl"))[::2]
    harm = _scores("Builtin.Harmfulness", [Trace(id="t", output=r["text"]) for r in statements], models)
    stereo = _scores("Builtin.Stereotyping", [Trace(id="t", output=r["text"]) for r in statements], models)
    hate = [r["label"] == "hate" for r in statements]
    assert _auroc([1 - s for s in harm], hate) >= 0.6
    assert _auroc([1 - s for s in stereo], hate) >= 0.6


def test_helpfulness_prefers_what_pandalm_annotators_preferred(data_dir: Path, models: Models) -> None:
    pairs = agreement.pandalm_pairs(data_dir, "test")[::2]
    better = _scores(
        "Builtin.Helpfulness", [Trace(id="t", input=p["request"], output=p["better"]) for p in pairs], models
    )
    worse = _scores(
        "Builtin.Helpfulness", [Trace(id="t", input=p["request"], output=p["worse"]) for p in pairs], models
    )
    assert sum(b > w for b, w in zip(better, worse, strict=True)) / len(pairs) >= 0.6


def test_coherence_tracks_summeval_experts(data_dir: Path, models: Models) -> None:
    rows = list(agreement.read_jsonl(data_dir / "summeval" / "summeval_summaries.jsonl"))[::4]
    scores = _scores("Builtin.Coherence", [Trace(id="t", output=r["summary"]) for r in rows], models)
    assert agreement.spearman(scores, [r["coherence"] for r in rows]) >= 0.2


def test_relevance_and_conciseness_on_constructed_contrasts(models: Models) -> None:
    question = "How do I reset my password?"
    on_topic = "Open Settings, choose Security, then click Reset password and follow the emailed link."
    off_topic = "Our company was founded in 1998 and has offices in four countries."
    relevance = _scores(
        "Builtin.ResponseRelevance", [Trace(id="t", input=question, output=o) for o in (on_topic, off_topic)], models
    )
    assert relevance[0] > relevance[1]
    rambling = " ".join([on_topic] * 3 + ["I hope this helps! Let me know if you have any other questions."])
    concise = _scores(
        "Builtin.Conciseness",
        [Trace(id="t", input=question + " Briefly.", output=o) for o in (on_topic, rambling)],
        models,
    )
    assert concise[0] == 1.0 and concise[1] < 0.5


def test_usage_reports_the_accel_work_of_each_result(models: Models) -> None:
    turn = Trace(
        id="t",
        input="Which plan has priority support?",
        output="The Business plan.",
        context=["Business includes priority support."],
    )
    (faithful,) = evaluate([Session(id="s", traces=[turn])], [create_evaluator("Builtin.Faithfulness")], models=models)
    kinds = {usage.model for usage in faithful.usage}
    assert "faithfulness" in kinds and any(
        usage.items > 0 and usage.model != "faithfulness" for usage in faithful.usage
    )
    assert all(usage.device_seconds > 0 and usage.usd > 0 for usage in faithful.usage), "simulated cost is charged"
