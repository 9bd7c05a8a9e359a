"""Run evaluators over sessions: batch all model work through accel, cache results by content hash.

``evaluate`` first collects every text every evaluator will embed, embeds them in one batched accel call, then
lets each evaluator judge all its targets at once (heads run once per evaluator). Results are cached in SQLite,
keyed by a hash of the evaluator's id and settings, the session's content, the target and the library version,
so an unchanged trace is never re-scored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from agentcore.evaluations.base import Evaluator, Judgement, Target, targets_for
from agentcore.evaluations.models import HEADS_DIR, Models
from agentcore.evaluations.result import ERROR_LABEL, NOT_APPLICABLE_LABEL, EvaluatorResult, Status, Usage
from agentcore.evaluations.trace import Session

log = logging.getLogger(__name__)

#: called with (evaluators done, evaluators total) so a CLI can draw a progress bar
Progress = Callable[[int, int], None]


def _fingerprint() -> str:
    """Library version plus the shipped heads: a change to either invalidates every cached result."""
    from agentcore import __version__

    digest = hashlib.sha256(__version__.encode())
    for path in sorted(HEADS_DIR.glob("*.onnx")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _settings(evaluator: Evaluator) -> str:
    public = {key: repr(value) for key, value in sorted(vars(evaluator).items()) if not key.startswith("_")}
    return json.dumps({"id": evaluator.id, "class": type(evaluator).__qualname__, **public}, sort_keys=True)


class ResultCache:
    """SQLite store of results by content hash; ``None`` path keeps nothing."""

    def __init__(self, path: str | Path | None) -> None:
        self._db: sqlite3.Connection | None = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path))
            self._db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str) -> EvaluatorResult | None:
        if self._db is None:
            return None
        row = self._db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        return EvaluatorResult.model_validate_json(row[0]) if row else None

    def put(self, items: Sequence[tuple[str, EvaluatorResult]]) -> None:
        if self._db is not None and items:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO results VALUES (?, ?)",
                    [(key, result.model_dump_json()) for key, result in items],
                )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def evaluate(
    sessions: Sequence[Session],
    evaluators: Sequence[Evaluator],
    *,
    models: Models | None = None,
    cache: ResultCache | None = None,
    progress: Progress | None = None,
) -> list[EvaluatorResult]:
    """Every evaluator's result on every target of its level, in evaluator then file order."""
    models = models or Models()
    cache = cache or ResultCache(None)
    fingerprint = _fingerprint()
    session_hash = {id(session): hashlib.sha256(session.model_dump_json().encode()).hexdigest() for session in sessions}
    plans: list[tuple[Evaluator, list[Target], list[str], list[EvaluatorResult | None]]] = []
    for evaluator in evaluators:
        targets = targets_for(evaluator.level, sessions)
        settings = _settings(evaluator)
        keys = [
            hashlib.sha256(f"{fingerprint}|{settings}|{session_hash[id(t.session)]}|{t.id}".encode()).hexdigest()
            for t in targets
        ]
        plans.append((evaluator, targets, keys, [cache.get(key) for key in keys]))
    models.prefetch(
        text
        for evaluator, targets, _, cached in plans
        for target, hit in zip(targets, cached, strict=True)
        if hit is None
        for text in evaluator.texts(target)
    )
    results: list[EvaluatorResult] = []
    for done, (evaluator, targets, keys, cached) in enumerate(plans, start=1):
        todo = [index for index, hit in enumerate(cached) if hit is None]
        judgements = evaluator.judge([targets[index] for index in todo], models) if todo else []
        fresh: list[tuple[str, EvaluatorResult]] = []
        for index, judgement in zip(todo, judgements, strict=True):
            if judgement is None:
                continue
            result = _result(evaluator, targets[index], judgement, models, len(todo))
            cached[index] = result
            if result.status is not Status.ERROR:  # a failed judgement is retried on the next run
                fresh.append((keys[index], result))
        cache.put(fresh)
        results.extend(result for result in cached if result is not None)
        # skipped targets are not cached: they are cheap to re-decide and carry no result
        log.info("%s: %d targets (%d cached)", evaluator.id, len(targets), len(targets) - len(todo))
        if progress is not None:
            progress(done, len(plans))
    return results


def _result(evaluator: Evaluator, target: Target, judgement: Judgement, models: Models, batch: int) -> EvaluatorResult:
    if judgement.applicable and not math.isfinite(judgement.score):  # inf would clamp to a pass, NaN to anything
        judgement = Judgement.error(
            f"{evaluator.id} returned the score {judgement.score!r}, no finite number: {judgement.explanation}",
            judgement.usage,
        )
    raw = float(min(max(judgement.score, 0.0), 1.0)) if judgement.applicable else 0.0
    usage = [
        models.embedding_usage(len(set(evaluator.texts(target)))),
        models.head_usage(evaluator.id, batch),
        judgement.usage,
    ]
    status = Status.ERROR if judgement.failed else Status.JUDGED if judgement.applicable else Status.NOT_APPLICABLE
    label = {Status.ERROR: ERROR_LABEL, Status.NOT_APPLICABLE: NOT_APPLICABLE_LABEL}.get(status)
    return EvaluatorResult(
        evaluator=evaluator.id,
        level=evaluator.level,
        target_id=target.id,
        session_id=target.session.id,
        score=evaluator.scale.snap(raw) if judgement.applicable else 0.0,
        raw_score=round(raw, 6),
        label=label or evaluator.scale.label(raw),
        passed=judgement.applicable and evaluator.passes(raw),
        explanation=judgement.explanation,
        usage=tuple(item for item in usage if isinstance(item, Usage)),
        status=status,
    )
