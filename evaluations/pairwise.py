"""Pairwise comparison: which of two agent versions (or two responses to one input) does each evaluator prefer?

Teams that change an agent ask "is B at least as good as A?", not "is B above 0.6?". :func:`compare` scores both
runs with the same evaluators in one batched pass, pairs targets (same session id, same position within the
session), and counts per evaluator the pairs B wins, loses and ties (scores within ``tie_margin``; for a rate
where lower is better, such as Refusal, the lower score wins). B's win rate counts a tie as half a win and comes
with a seeded bootstrap 95% confidence interval. A ``max_loss`` gate fails when B loses more pairs than it wins
by more than that share of the pairs. Pairs where either side is not applicable are left out and counted.

Fails closed, so that B cannot pass by leaving out (or erroring on) what it would lose: a session A ran and B lacks
fails the comparison's ``unmatched_a`` check, a turn of a shared session that B has no result for fails the
evaluator's ``missing_in_b`` check, and a pair with an error result on either side fails its ``errors`` check,
gated or not (as an error fails ``eval run``). Sessions only B ran are reported, not compared: nothing in them can
change a win or a loss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentcore.evaluations.base import Evaluator
from agentcore.evaluations.errors import EvaluationError
from agentcore.evaluations.models import Models
from agentcore.evaluations.outcome import Check
from agentcore.evaluations.result import EvaluatorResult, Level, Status
from agentcore.evaluations.runner import evaluate
from agentcore.evaluations.trace import Session, Trace

#: bootstrap resamples behind each win-rate confidence interval
BOOTSTRAP_SAMPLES = 2000


class Preference(StrEnum):
    A = "a"
    B = "b"
    TIE = "tie"


class Pair(BaseModel):
    """One target judged on both sides."""

    model_config = ConfigDict(frozen=True)

    evaluator: str
    level: Level
    session_id: str
    target_a: str
    target_b: str
    score_a: float
    score_b: float
    preferred: Preference


class PairwiseSummary(BaseModel):
    """One evaluator's verdict over every pair."""

    model_config = ConfigDict(frozen=True)

    evaluator: str
    level: Level
    pairs: int
    wins_b: int
    wins_a: int
    ties: int
    not_applicable: int
    errors: int = Field(default=0, ge=0, description="pairs with an error result on either side: fail the comparison")
    missing_b: int = Field(default=0, ge=0, description="A's targets in shared sessions with no result in B: fail")
    win_rate_b: float
    ci_low: float
    ci_high: float
    checks: tuple[Check, ...] = ()

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)


class Comparison(BaseModel):
    """Everything a comparison report shows; ``passed`` is what the CLI's exit code follows."""

    model_config = ConfigDict(frozen=True)

    summaries: tuple[PairwiseSummary, ...]
    pairs: tuple[Pair, ...]
    unmatched_a: tuple[str, ...]
    unmatched_b: tuple[str, ...]
    passed: bool
    checks: tuple[Check, ...] = Field(default=(), description="checks of the whole comparison (``unmatched_a``)")


def _keyed(
    results: Sequence[EvaluatorResult], sessions: Sequence[Session]
) -> dict[tuple[str, str, int], EvaluatorResult]:
    """Results by (evaluator, session, turn number): the same turn of the same conversation on both sides."""
    turn_of = {(session.id, trace.id): number for session in sessions for number, trace in enumerate(session.traces)}
    return {
        (result.evaluator, result.session_id, turn_of.get((result.session_id, result.target_id), -1)): result
        for result in results
    }


def _preference(a: float, b: float, tie_margin: float, higher_is_better: bool) -> Preference:
    if abs(a - b) <= tie_margin:
        return Preference.TIE
    return Preference.B if (b > a) == higher_is_better else Preference.A


def _win_rate(points: np.ndarray, seed: int) -> tuple[float, float, float]:
    """Mean of per-pair points (1 win, 0.5 tie, 0 loss) and its bootstrap 95% interval."""
    if not len(points):
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = points[rng.integers(0, len(points), size=(BOOTSTRAP_SAMPLES, len(points)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return round(float(points.mean()), 6), round(float(low), 6), round(float(high), 6)


def compare(
    sessions_a: Sequence[Session],
    sessions_b: Sequence[Session],
    evaluators: Sequence[Evaluator],
    *,
    models: Models | None = None,
    tie_margin: float = 0.0,
    max_loss: Mapping[str, float] | None = None,
    seed: int = 0,
) -> Comparison:
    """Score A and B with ``evaluators`` and compare them pair by pair (see the module docstring)."""
    if not 0 <= tie_margin < 1:
        raise EvaluationError(f"tie_margin must be in [0, 1), got {tie_margin}")
    calls = sorted(evaluator.id for evaluator in evaluators if evaluator.level is Level.TOOL_CALL)
    if calls:
        raise EvaluationError(
            f"{calls} judge single tool calls, which two runs need not share; compare sessions and turns, "
            "or score tool calls against a reference"
        )
    unknown = sorted(set(max_loss or {}) - {evaluator.id for evaluator in evaluators})
    if unknown:
        raise EvaluationError(f"max_loss names evaluators that are not compared: {unknown}")
    ids_a, ids_b = [s.id for s in sessions_a], [s.id for s in sessions_b]
    if len(set(ids_a)) != len(ids_a) or len(set(ids_b)) != len(ids_b):
        raise EvaluationError("session ids must be unique within each side: pairs are matched by session id")
    common = set(ids_a) & set(ids_b)
    if not common:
        raise EvaluationError("A and B share no session id: run both agent versions over the same inputs")
    paired_a = [s for s in sessions_a if s.id in common]
    paired_b = [s for s in sessions_b if s.id in common]
    models = models or Models()
    keyed_a = _keyed(evaluate(paired_a, evaluators, models=models), paired_a)
    keyed_b = _keyed(evaluate(paired_b, evaluators, models=models), paired_b)
    pairs: list[Pair] = []
    summaries = []
    for evaluator in evaluators:
        theirs = [(key, result) for key, result in keyed_a.items() if key[0] == evaluator.id]
        mine = [(result, keyed_b[key]) for key, result in theirs if key in keyed_b]
        missing_b = len(theirs) - len(mine)
        errors = sum(Status.ERROR in (a.status, b.status) for a, b in mine)
        judged = [(a, b) for a, b in mine if a.judged and b.judged]
        ours = [
            Pair(
                evaluator=evaluator.id,
                level=evaluator.level,
                session_id=a.session_id,
                target_a=a.target_id,
                target_b=b.target_id,
                score_a=a.raw_score,
                score_b=b.raw_score,
                preferred=_preference(a.raw_score, b.raw_score, tie_margin, evaluator.higher_is_better),
            )
            for a, b in judged
        ]
        pairs.extend(ours)
        points = np.asarray([{Preference.B: 1.0, Preference.TIE: 0.5, Preference.A: 0.0}[p.preferred] for p in ours])
        rate, low, high = _win_rate(points, seed)
        wins_b = sum(p.preferred is Preference.B for p in ours)
        wins_a = sum(p.preferred is Preference.A for p in ours)
        checks: list[Check] = []
        if errors:
            checks.append(Check(name="errors", threshold=0, actual=errors, passed=False))
        if missing_b:
            checks.append(Check(name="missing_in_b", threshold=0, actual=missing_b, passed=False))
        if max_loss and evaluator.id in max_loss:
            loss = round((wins_a - wins_b) / len(ours), 6) if ours else 1.0
            threshold = max_loss[evaluator.id]
            checks.append(Check(name="max_loss", threshold=threshold, actual=loss, passed=loss <= threshold))
        summaries.append(
            PairwiseSummary(
                evaluator=evaluator.id,
                level=evaluator.level,
                pairs=len(ours),
                wins_b=wins_b,
                wins_a=wins_a,
                ties=len(ours) - wins_a - wins_b,
                not_applicable=len(mine) - len(judged) - errors,
                errors=errors,
                missing_b=missing_b,
                win_rate_b=rate,
                ci_low=low,
                ci_high=high,
                checks=tuple(checks),
            )
        )
    unmatched_a = tuple(sorted(set(ids_a) - common))
    overall = (Check(name="unmatched_a", threshold=0, actual=len(unmatched_a), passed=False),) if unmatched_a else ()
    return Comparison(
        summaries=tuple(summaries),
        pairs=tuple(pairs),
        unmatched_a=unmatched_a,
        unmatched_b=tuple(sorted(set(ids_b) - common)),
        passed=not overall and all(summary.passed for summary in summaries),
        checks=overall,
    )


def compare_responses(
    request: str,
    response_a: str,
    response_b: str,
    evaluators: Sequence[Evaluator],
    *,
    context: Sequence[str] = (),
    models: Models | None = None,
    tie_margin: float = 0.0,
) -> dict[str, Preference]:
    """Which of two responses to one request each (trace-level) evaluator prefers."""
    turn = Trace(id="turn", input=request, context=list(context))
    side_a, side_b = (
        [Session(id="pair", traces=[turn.model_copy(update={"output": response})])]
        for response in (response_a, response_b)
    )
    outcome = compare(side_a, side_b, evaluators, models=models, tie_margin=tie_margin)
    return {pair.evaluator: pair.preferred for pair in outcome.pairs}


def render_comparison_markdown(comparison: Comparison, *, title: str) -> str:
    """A summary table for CI step summaries: B versus A per evaluator."""
    verdict = "✅ passed" if comparison.passed else "❌ failed"
    lines = [
        f"## Comparison: {title} — {verdict}",
        "",
        "| Evaluator | Pairs | B wins | Ties | A wins | B win rate (95% CI) | Not applicable | Errors | Missing in B "
        "| Gates |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for s in comparison.summaries:
        gates = ", ".join(f"{'✅' if c.passed else '❌'} {c.name} {c.threshold:g} ({c.actual:+.3f})" for c in s.checks)
        lines.append(
            f"| {s.evaluator} | {s.pairs} | {s.wins_b} | {s.ties} | {s.wins_a} "
            f"| {s.win_rate_b:.1%} ({s.ci_low:.1%}–{s.ci_high:.1%}) | {s.not_applicable} | {s.errors} | {s.missing_b} "
            f"| {gates or '—'} |"
        )
    if comparison.unmatched_a or comparison.unmatched_b:
        only = f"{len(comparison.unmatched_a)} only in A, {len(comparison.unmatched_b)} only in B"
        verdict = " (B lacks sessions A ran: ❌ unmatched_a)" if comparison.unmatched_a else " (not compared)"
        lines += ["", f"Unpaired sessions: {only}{verdict}."]
    return "\n".join(lines) + "\n"
