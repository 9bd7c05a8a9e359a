"""``EvaluationSuite``: load a suite file, run its evaluators over its traces, gate the result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentcore.evaluations.importers import load_sessions
from agentcore.evaluations.models import Models
from agentcore.evaluations.outcome import Outcome, read_baseline, summarise
from agentcore.evaluations.pairwise import Comparison, compare
from agentcore.evaluations.result import Level
from agentcore.evaluations.runner import Progress, ResultCache, evaluate
from agentcore.evaluations.suite import Gate, Suite, load_suite
from agentcore.evaluations.trace import Session

if TYPE_CHECKING:
    from agentcore.accel.runtime import Accelerator


class EvaluationSuite:
    """A suite ready to run; ``run()`` returns the :class:`Outcome` every report is rendered from."""

    def __init__(self, suite: Suite, *, accelerator: Accelerator | None = None) -> None:
        self.suite = suite
        self.evaluators = suite.build_evaluators()
        self._accelerator = accelerator

    @classmethod
    def from_file(cls, path: str | Path, *, accelerator: Accelerator | None = None) -> EvaluationSuite:
        return cls(load_suite(path), accelerator=accelerator)

    def _models(self) -> Models:
        settings = self.suite.suite
        return Models(self._accelerator, tenant=settings.tenant, agent=f"eval:{settings.name}")

    def run(
        self, *, baseline: str | Path | None = None, cache: bool = True, progress: Progress | None = None
    ) -> Outcome:
        """Evaluate every trace source; ``baseline`` (a JSON report) overrides the suite's own."""
        settings = self.suite.suite
        sessions = self.suite.sessions()
        baseline_path = self.suite.baseline_path(baseline)
        store = ResultCache(Path(settings.cache) if cache and settings.cache else None)
        try:
            results = evaluate(
                sessions,
                self.evaluators,
                models=self._models(),
                cache=store,
                progress=progress,
            )
        finally:
            store.close()
        gates = {
            entry.id: Gate.model_validate(entry.model_dump(include=set(Gate.model_fields)))
            for entry in self.suite.evaluators
        }
        return summarise(
            settings.name,
            len(sessions),
            results,
            gates,
            baseline=read_baseline(baseline_path) if baseline_path is not None else None,
            max_regression=settings.max_regression,
            lower_is_better=frozenset(e.id for e in self.evaluators if not e.higher_is_better),
            expected={evaluator.id: evaluator.level for evaluator in self.evaluators},
        )

    def compare(
        self,
        a: str | Path,
        b: str | Path,
        *,
        tie_margin: float = 0.0,
        max_loss: dict[str, float] | None = None,
    ) -> Comparison:
        """Compare two runs of the agent (trace files or folders of them) with the suite's session and turn evaluators.

        Gates are the entries' ``max_loss`` (``max_loss`` here overrides them per evaluator); tool-call evaluators
        are left out, since two runs need not make the same calls.
        """
        evaluators = [e for e in self.evaluators if e.level is not Level.TOOL_CALL]
        gates = {entry.id: entry.max_loss for entry in self.suite.evaluators if entry.max_loss is not None}
        return compare(
            _sessions(a),
            _sessions(b),
            evaluators,
            models=self._models(),
            tie_margin=tie_margin,
            max_loss={**gates, **(max_loss or {})},
        )


def _sessions(path: str | Path) -> list[Session]:
    """The sessions of a trace file, or of every ``*.jsonl`` / ``*.json`` file in a folder."""
    source = Path(path)
    files = sorted([*source.glob("*.jsonl"), *source.glob("*.json")]) if source.is_dir() else [source]
    return [session for file in files for session in load_sessions(file)]
