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
    threshold: float
    actual: float
    passed: bool


class EvaluatorSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    evaluator: str
    level: Level
    count: int = Field(description="results judged; mean, minimum and pass rate are over these")
    not_applicable: int = 0
    errors: int = Field(default=0, description="results that could not be judged (a failed LLM judge): fail the run")
    coverage: float = Field(default=1.0, description="judged / (judged + not applicable)")
    mean: float
    minimum: float
    pass_rate: float
    baseline_mean: float | None = None
    regression: float | None = None
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


def read_baseline(path: Path) -> dict[str, float]:
    """Evaluator means from an earlier JSON report."""
    try:
        report = Outcome.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"baseline {path} does not exist; run once with --json {path} to create it") from None
    except (ValidationError, json.JSONDecodeError) as error:
        raise SuiteError(f"baseline {path} is not an agentcore JSON report ({REPORT_SCHEMA}): {error}") from None
    return {summary.evaluator: summary.mean for summary in report.summaries}


def summarise(
    suite: str,
    sessions: int,
    results: Sequence[EvaluatorResult],
    gates: dict[str, Gate],
    *,
    baseline: dict[str, float] | None = None,
    max_regression: float = 0.05,
    lower_is_better: frozenset[str] = frozenset(),
) -> Outcome:
    """Group results by evaluator, apply gates and the baseline regression check.

    Scores are summarised over judged results only; not-applicable ones lower the coverage. An evaluator that
    judged nothing has mean, minimum and pass rate 0, so a gate on any of them fails rather than passing on
    nothing. ``lower_is_better`` names rate evaluators (Refusal) whose regression is a *rise* of the mean.
    """
    summaries = []
    for evaluator in dict.fromkeys(result.evaluator for result in results):
        everything = [result for result in results if result.evaluator == evaluator]
        mine = [result for result in everything if result.judged]
        scores = [result.score for result in mine]
        mean = _round(sum(scores) / len(scores)) if mine else 0.0
        minimum = _round(min(scores)) if mine else 0.0
        pass_rate = _round(sum(result.passed for result in mine) / len(mine)) if mine else 0.0
        coverage = _round(len(mine) / len(everything))
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
                checks.append(Check(name=name, threshold=threshold, actual=actual, passed=actual >= threshold))
        if gate.max_mean is not None:
            checks.append(Check(name="max_mean", threshold=gate.max_mean, actual=mean, passed=mean <= gate.max_mean))
        base = (baseline or {}).get(evaluator)
        regression = None
        if base is not None:
            regression = _round(mean - base if evaluator in lower_is_better else base - mean)
            checks.append(
                Check(
                    name="max_regression",
                    threshold=max_regression,
                    actual=regression,
                    passed=regression <= max_regression,
                )
            )
        summaries.append(
            EvaluatorSummary(
                evaluator=evaluator,
                level=everything[0].level,
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
