"""Summaries per evaluator, threshold gates and baseline regressions: what decides a CI run's exit code."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from agentcore.evaluations.errors import SuiteError
from agentcore.evaluations.llm_cost import TraceCost
from agentcore.evaluations.result import EvaluatorResult, Level, Status
from agentcore.evaluations.suite import Gate

REPORT_SCHEMA = "agentcore.eval-report/1"


class Check(BaseModel):
    """One gate: e.g. ``min_mean`` 0.6 against an actual 0.71."""

    model_config = ConfigDict(frozen=True)

    name: str
    threshold: float = Field(allow_inf_nan=False)
    actual: float = Field(allow_inf_nan=False)
    passed: bool


class EvaluatorSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    evaluator: str
    level: Level
    count: int = Field(ge=0, description="results judged; mean, minimum and pass rate are over these")
    not_applicable: int = Field(default=0, ge=0)
    errors: int = Field(
        default=0, ge=0, description="results that could not be judged (a failed LLM judge): fail the run"
    )
    coverage: float = Field(default=1.0, ge=0, le=1, description="judged / (judged + not applicable)")
    mean: float = Field(ge=0, le=1)
    minimum: float = Field(ge=0, le=1)
    pass_rate: float = Field(ge=0, le=1)
    baseline_mean: float | None = Field(default=None, ge=0, le=1, description="over the cases both runs judged")
    regression: float | None = Field(default=None, ge=-1, le=1)
    checks: tuple[Check, ...] = ()

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)


class RunTiming(BaseModel):
    """When ``agentcore eval run`` ran the suite (UTC): the one part of a report that differs between identical runs,
    so the library's :meth:`EvaluationSuite.run` leaves it out and the CLI adds it."""

    model_config = ConfigDict(frozen=True)

    version: Literal[1] = 1
    started_at: AwareDatetime
    finished_at: AwareDatetime
    duration_s: float = Field(ge=0)


class Outcome(BaseModel):
    """Everything a report shows: the suite, per-evaluator summaries, every result, and the verdict."""

    model_config = ConfigDict(frozen=True)

    schema_version: str = REPORT_SCHEMA
    suite: str
    sessions: int
    summaries: tuple[EvaluatorSummary, ...]
    results: tuple[EvaluatorResult, ...]
    passed: bool
    timing: RunTiming | None = Field(default=None, description="added by the CLI; absent in reports before it")
    llm_cost: TraceCost | None = Field(default=None, description="the traces' LLM calls priced (simulated)")


def _round(value: float) -> float:
    return round(value, 6)


def read_baseline(path: Path) -> Outcome:
    """An earlier JSON report; its judged results are what this run's regressions are measured against."""
    try:
        return Outcome.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"baseline {path} does not exist; run once with --report {path} to create it") from None
    except (ValidationError, json.JSONDecodeError) as error:
        raise SuiteError(f"baseline {path} is not an agentcore JSON report ({REPORT_SCHEMA}): {error}") from None


def _judged_scores(results: Sequence[EvaluatorResult]) -> dict[str, dict[str, float]]:
    """Judged scores by evaluator, then by case (``session/target``)."""
    scores: dict[str, dict[str, float]] = {}
    for result in results:
        if result.judged:
            scores.setdefault(result.evaluator, {})[result.qualified_id] = result.score
    return scores


def _mean(values: Sequence[float]) -> float:
    return _round(sum(values) / len(values))


def _regression_checks(
    now: dict[str, float], base: dict[str, float] | None, max_regression: float, lower_is_better: bool
) -> tuple[float | None, float | None, list[Check]]:
    """(baseline mean, regression, checks) over the cases both runs judged.

    Fails closed: an evaluator the baseline judged nothing for fails ``max_regression`` (actual 1), and baseline
    cases this run did not judge (dropped, renamed, now not applicable) fail ``baseline_cases`` (actual: how many).
    Cases new in this run are not compared: easy additions cannot hide a regression on the old ones.
    """
    if not base:
        return None, None, [Check(name="max_regression", threshold=max_regression, actual=1.0, passed=False)]
    checks = []
    missing = [case for case in base if case not in now]
    if missing:
        checks.append(Check(name="baseline_cases", threshold=0, actual=len(missing), passed=False))
    common = [case for case in base if case in now]
    if not common:
        return None, None, checks
    base_mean, mean = _mean([base[case] for case in common]), _mean([now[case] for case in common])
    regression = _round(mean - base_mean if lower_is_better else base_mean - mean)
    checks.append(
        Check(name="max_regression", threshold=max_regression, actual=regression, passed=regression <= max_regression)
    )
    return base_mean, regression, checks


def summarise(
    suite: str,
    sessions: int,
    results: Sequence[EvaluatorResult],
    gates: dict[str, Gate],
    *,
    baseline: Outcome | None = None,
    max_regression: float = 0.05,
    lower_is_better: frozenset[str] = frozenset(),
    expected: dict[str, Level] | None = None,
) -> Outcome:
    """Group results by evaluator, apply gates and the baseline regression check.

    Scores are summarised over judged results only; not-applicable ones lower the coverage. A gate that cannot
    be computed fails: every gate of an evaluator that judged nothing (no result at all, or none judged) fails,
    ``max_mean`` too. ``expected`` names the suite's evaluators (with their level) so that one without any
    result still gets its summary and its gates (a baseline's evaluators that the suite no longer has are not
    compared). ``lower_is_better`` names rate evaluators (Refusal) whose regression is a *rise* of the mean.
    """
    levels = dict(expected or {})
    for result in results:
        levels.setdefault(result.evaluator, result.level)
    base_scores = _judged_scores(baseline.results) if baseline is not None else {}
    now_scores = _judged_scores(results)
    summaries = []
    for evaluator, level in levels.items():
        everything = [result for result in results if result.evaluator == evaluator]
        mine = [result for result in everything if result.judged]
        scores = [result.score for result in mine]
        mean = _mean(scores) if mine else 0.0
        minimum = _round(min(scores)) if mine else 0.0
        pass_rate = _mean([float(result.passed) for result in mine]) if mine else 0.0
        coverage = _round(len(mine) / len(everything)) if everything else 0.0
        errors = sum(result.status is Status.ERROR for result in everything)
        gate = gates.get(evaluator, Gate())
        checks = []
        if errors:
            checks.append(Check(name="errors", threshold=0, actual=errors, passed=False))
        for name, actual in (
            ("min_mean", mean),
            ("min_score", minimum),
            ("min_pass_rate", pass_rate),
            ("min_coverage", coverage),
        ):
            threshold = getattr(gate, name)
            if threshold is not None:
                checks.append(
                    Check(name=name, threshold=threshold, actual=actual, passed=bool(mine) and actual >= threshold)
                )
        if gate.max_mean is not None:
            passed = bool(mine) and mean <= gate.max_mean
            checks.append(Check(name="max_mean", threshold=gate.max_mean, actual=mean, passed=passed))
        base, regression = None, None
        if baseline is not None:
            base, regression, compared = _regression_checks(
                now_scores.get(evaluator, {}), base_scores.get(evaluator), max_regression, evaluator in lower_is_better
            )
            checks += compared
        summaries.append(
            EvaluatorSummary(
                evaluator=evaluator,
                level=level,
                count=len(mine),
                not_applicable=len(everything) - len(mine) - errors,
                errors=errors,
                coverage=coverage,
                mean=mean,
                minimum=minimum,
                pass_rate=pass_rate,
                baseline_mean=base,
                regression=regression,
                checks=tuple(checks),
            )
        )
    return Outcome(
        suite=suite,
        sessions=sessions,
        summaries=tuple(summaries),
        results=tuple(results),
        passed=all(summary.passed for summary in summaries),
    )
