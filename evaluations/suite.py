"""Evaluation suites: a TOML file naming trace sources, evaluators, thresholds and an optional baseline.

::

    [suite]
    name = "retail-agent"
    traces = ["traces/*.jsonl"]      # globs, relative to the suite file
    baseline = "baseline.json"       # an earlier JSON report (optional)
    max_regression = 0.05            # tolerated drop of an evaluator's mean versus the baseline

    [[evaluators]]
    id = "Builtin.Helpfulness"
    threshold = 0.5                  # a single result passes at or above this (optional)
    min_mean = 0.6                   # gates: mean score, lowest score, share of passing results
    min_score = 0.1
    min_pass_rate = 0.8

Entries with a ``type`` define custom evaluators (see :mod:`agentcore.evaluations.custom`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentcore.evaluations.base import Evaluator
from agentcore.evaluations.custom import RuleSpec, build_rule
from agentcore.evaluations.errors import EvaluationError, SuiteError
from agentcore.evaluations.importers import load_sessions
from agentcore.evaluations.importers.jsonl import describe_validation
from agentcore.evaluations.judges import JudgeSettings, with_judges
from agentcore.evaluations.registry import create_evaluator
from agentcore.evaluations.trace import Session


class Gate(BaseModel):
    """Thresholds on one evaluator's results (any left unset is not checked)."""

    model_config = ConfigDict(extra="forbid")

    min_mean: float | None = Field(default=None, ge=0, le=1)
    min_score: float | None = Field(default=None, ge=0, le=1)
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    max_mean: float | None = Field(
        default=None, ge=0, le=1, description="for rates where lower is better, e.g. Refusal"
    )
    min_coverage: float | None = Field(
        default=None, ge=0, le=1, description="the share of targets the evaluator could judge (not 'not applicable')"
    )


class EvaluatorEntry(Gate):
    id: str
    threshold: float | None = Field(default=None, ge=0, le=1)
    max_loss: float | None = Field(
        default=None, ge=0, le=1, description="`eval compare`: B may lose this share of pairs more than it wins"
    )
    type: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    def build(self) -> Evaluator:
        if self.type is not None:
            spec = RuleSpec.model_validate({"id": self.id, "type": self.type, **self.options})
            evaluator = build_rule(spec)
        else:
            evaluator = create_evaluator(self.id, **self.options)
        if self.threshold is not None:
            evaluator.threshold = self.threshold
        return evaluator


class SuiteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    traces: list[str] = Field(min_length=1)
    baseline: str | None = None
    max_regression: float = Field(0.05, ge=0, le=1)
    tenant: str = "eval"
    cache: str | None = ".agentcore/eval-cache.sqlite"


class Suite(BaseModel):
    """A parsed suite file; paths are resolved against ``root`` (the suite file's folder)."""

    model_config = ConfigDict(extra="forbid")

    suite: SuiteSettings
    evaluators: list[EvaluatorEntry] = Field(min_length=1)
    judge: JudgeSettings | None = None
    root: Path = Path(".")

    def trace_files(self) -> list[Path]:
        files: list[Path] = []
        for pattern in self.suite.traces:
            matched = sorted(self.root.glob(pattern)) if any(c in pattern for c in "*?[") else [self.root / pattern]
            if not matched or not all(path.is_file() for path in matched):
                raise SuiteError(
                    f"suite {self.suite.name!r}: trace source {pattern!r} matches no file under {self.root}"
                )
            files.extend(matched)
        return files

    def sessions(self) -> list[Session]:
        return [session for path in self.trace_files() for session in load_sessions(path)]

    def build_evaluators(self) -> list[Evaluator]:
        try:
            return with_judges([entry.build() for entry in self.evaluators], self.judge)
        except EvaluationError as error:
            raise SuiteError(f"suite {self.suite.name!r}: {error}") from None

    def baseline_path(self, override: str | Path | None = None) -> Path | None:
        if override is not None:
            return Path(override)
        return self.root / self.suite.baseline if self.suite.baseline else None


def load_suite(path: str | Path) -> Suite:
    """Parse and validate a suite file (SuiteError names the file and the problem)."""
    file = Path(path)
    if not file.is_file():
        raise SuiteError(f"suite file {file} does not exist")
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(f"{file}: invalid TOML: {error}") from None
    try:
        return Suite.model_validate({**raw, "root": file.resolve().parent})
    except ValidationError as error:
        raise SuiteError(f"{file}: {describe_validation(error)}") from None
