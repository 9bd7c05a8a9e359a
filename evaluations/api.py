"""``EvaluationSuite``: load a suite file, run its evaluators over its traces, gate the result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentcore.evaluations.models import Models
from agentcore.evaluations.outcome import Outcome, read_baseline, summarise
from agentcore.evaluations.runner import Progress, ResultCache, evaluate
from agentcore.evaluations.suite import Gate, Suite, load_suite

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
                models=Models(self._accelerator, tenant=settings.tenant, agent=f"eval:{settings.name}"),
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
        )
