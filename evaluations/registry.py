"""The evaluator registry: ids (``Builtin.*`` and custom ones) -> evaluator classes or factories."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from agentcore.evaluations.base import Evaluator
from agentcore.evaluations.errors import UnknownEvaluatorError

_REGISTRY: dict[str, Callable[..., Evaluator]] = {}

E = TypeVar("E", bound=type[Evaluator])


def register(cls: E) -> E:
    """Class decorator: make ``cls`` available by its ``id`` (a second class with the same id is an error)."""
    if cls.id in _REGISTRY and _REGISTRY[cls.id] is not cls:
        raise ValueError(f"evaluator id {cls.id!r} is already registered")
    _REGISTRY[cls.id] = cls
    return cls


def _load_builtins() -> None:
    import agentcore.evaluations.builtin  # noqa: F401  (registers the built-in evaluators)


def create_evaluator(evaluator_id: str, **options: Any) -> Evaluator:
    """A new evaluator instance for ``evaluator_id``; ``options`` set attributes such as ``threshold``."""
    _load_builtins()
    factory = _REGISTRY.get(evaluator_id)
    if factory is None:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownEvaluatorError(f"unknown evaluator {evaluator_id!r}; known evaluators: {known}")
    evaluator = factory()
    for key, value in options.items():
        if key != "threshold" and not hasattr(evaluator, key):
            raise UnknownEvaluatorError(f"evaluator {evaluator_id!r} has no option {key!r}")
        setattr(evaluator, key, value)
    return evaluator


def evaluator_classes() -> dict[str, Callable[..., Evaluator]]:
    """Every registered evaluator by id (built-ins included), sorted by id."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))
