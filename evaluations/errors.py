"""Errors of agentcore.evaluations; each says what was wrong and where (file and line for traces)."""

from __future__ import annotations

from pathlib import Path

from agentcore.errors import AgentCoreError


class EvaluationError(AgentCoreError):
    """An evaluation could not be set up or run."""


class TraceFormatError(EvaluationError):
    """A trace file is malformed; the message names the file and the 1-based line."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class SuiteError(EvaluationError):
    """A suite file is invalid (unknown evaluator, bad threshold, missing trace source...)."""


class UnknownEvaluatorError(EvaluationError):
    """An evaluator id is not registered."""
