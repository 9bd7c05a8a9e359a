"""Evaluation runs: the JSON reports ``agentcore eval run --report`` wrote, trends per evaluator, failing targets.

A run's time is the start the CLI wrote into its report (``timing``); reports written before that field existed
fall back to their file's modification time, labelled as such, since a copy or checkout changes it. Files that are
not evaluation reports are listed as unreadable with the reason, never dropped.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agentcore.evaluations.outcome import REPORT_SCHEMA, Outcome
from agentcore.evaluations.result import EvaluatorResult


@dataclass(frozen=True)
class Run:
    id: str  # the report's path relative to the reports folder
    at: float  # when it started (UTC epoch seconds)
    outcome: Outcome
    from_file_time: bool = False  # an old report without ``timing``: ``at`` is the file's modification time

    @property
    def duration_s(self) -> float | None:
        return self.outcome.timing.duration_s if self.outcome.timing is not None else None


def _run(rel: str, path: Path, outcome: Outcome) -> Run:
    if outcome.timing is not None:
        return Run(rel, outcome.timing.started_at.timestamp(), outcome)
    return Run(rel, path.stat().st_mtime, outcome, from_file_time=True)


@dataclass(frozen=True)
class Unreadable:
    id: str
    reason: str


def load(folder: Path | None) -> tuple[list[Run], list[Unreadable]]:
    """Every report under ``folder``, oldest first."""
    if folder is None or not folder.is_dir():
        return [], []
    runs, bad = [], []
    for path in sorted(folder.rglob("*.json")):
        rel = path.relative_to(folder).as_posix()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("schema_version") != REPORT_SCHEMA:
                continue  # some other JSON file (a comparison, a trace export): not a run
            runs.append(_run(rel, path, Outcome.model_validate(data)))
        except (OSError, json.JSONDecodeError, ValidationError) as error:
            bad.append(Unreadable(rel, f"{type(error).__name__}: {str(error).splitlines()[0]}"))
    return sorted(runs, key=lambda r: (r.at, r.id)), bad


def trends(runs: list[Run]) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """suite -> evaluator -> [(run time, mean)]."""
    found: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for run in runs:
        for summary in run.outcome.summaries:
            found.setdefault(run.outcome.suite, {}).setdefault(summary.evaluator, []).append((run.at, summary.mean))
    return found


def previous(runs: list[Run], run: Run) -> Run | None:
    """The suite's run before ``run``: what the detail page compares against when the report has no baseline."""
    earlier = [r for r in runs if r.outcome.suite == run.outcome.suite and (r.at, r.id) < (run.at, run.id)]
    return earlier[-1] if earlier else None


def failing(outcome: Outcome) -> list[EvaluatorResult]:
    """Judged results that did not pass, worst first."""
    return sorted((r for r in outcome.results if r.judged and not r.passed), key=lambda r: (r.score, r.evaluator))


def deltas(run: Run, before: Run | None) -> dict[str, float]:
    """evaluator -> mean change since ``before``."""
    if before is None:
        return {}
    means = {s.evaluator: s.mean for s in before.outcome.summaries}
    return {s.evaluator: s.mean - means[s.evaluator] for s in run.outcome.summaries if s.evaluator in means}


def day(ts: float) -> str:
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return moment.strftime("%m-%d" if moment.hour == moment.minute == 0 else "%m-%d %H:%M")
