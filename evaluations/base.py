"""The evaluator protocol: what the runner hands an evaluator (targets, batched models) and what it gets back.

Evaluators score *all* their targets in one call so that model work is batched: the runner first asks every
evaluator which texts it will embed (:meth:`Evaluator.texts`), embeds them all in one accel call, then calls
:meth:`Evaluator.judge` with a :class:`Models` whose embeddings are already cached.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from agentcore.evaluations.models import Models
from agentcore.evaluations.result import Level, Scale, Usage
from agentcore.evaluations.trace import Session, ToolCall, Trace


@dataclass(frozen=True)
class Target:
    """What one result is about; ``trace`` is set for trace and tool-call levels, ``call`` for tool calls."""

    session: Session
    trace: Trace | None = None
    call: ToolCall | None = None

    @property
    def id(self) -> str:
        if self.call is not None:
            return self.call.id
        return self.trace.id if self.trace is not None else self.session.id

    @property
    def history(self) -> list[Trace]:
        """The session's turns up to and including this one (what the agent could know at this point)."""
        if self.trace is None:
            return list(self.session.traces)
        position = next(
            (i for i, turn in enumerate(self.session.traces) if turn is self.trace), len(self.session.traces) - 1
        )
        return self.session.traces[: position + 1]

    @property
    def context(self) -> list[str]:
        """What a reply may rely on: this turn's documents plus the earlier turns (their text and documents)."""
        earlier = [text for turn in self.history[:-1] for text in (turn.input, turn.output, *turn.documents) if text]
        return [*earlier, *self.turn.documents]

    @property
    def turn(self) -> Trace:
        if self.trace is None:
            raise ValueError("this target is a session; it has no single trace")
        return self.trace


@dataclass(frozen=True)
class Judgement:
    """A continuous score in [0, 1] (1 = the scale's top label) and why.

    ``applicable=False`` says the evaluator had nothing it could verify on this target (no parsable
    instruction, no reference): the result is reported as not applicable and counted against coverage, never
    as a pass.
    """

    score: float
    explanation: str
    applicable: bool = True
    failed: bool = False
    #: model work this judgement caused beyond the runner's batched embeddings and heads (an LLM judge's call)
    usage: Usage | None = None

    @classmethod
    def not_applicable(cls, explanation: str) -> Judgement:
        return cls(0.0, explanation, applicable=False)

    @classmethod
    def error(cls, explanation: str, usage: Usage | None = None) -> Judgement:
        """The judgement could not be made (e.g. an LLM judge failed): an error result, never a pass."""
        return cls(0.0, explanation, applicable=False, failed=True, usage=usage)


def targets_for(level: Level, sessions: Sequence[Session]) -> list[Target]:
    """Every target of ``level`` in ``sessions``, in file order."""
    if level is Level.SESSION:
        return [Target(session) for session in sessions]
    if level is Level.TRACE:
        return [Target(session, trace) for session in sessions for trace in session.traces]
    return [
        Target(session, trace, call) for session in sessions for trace in session.traces for call in trace.tool_calls
    ]


class Evaluator(ABC):
    """Base of every evaluator. Subclasses set the class attributes and implement :meth:`judge`."""

    id: ClassVar[str]
    level: ClassVar[Level]
    scale: ClassVar[Scale]
    description: ClassVar[str]
    #: a result passes when its score is at least this (Refusal inverts: see ``higher_is_better``)
    threshold: float = 0.5
    higher_is_better: ClassVar[bool] = True

    def texts(self, target: Target) -> list[str]:
        """Texts this evaluator will embed for ``target``; the runner embeds all of them in one batch."""
        return []

    def under_test(self, target: Target) -> bool:
        """Whether ``target`` is one this evaluator judges (an LLM judge standing in for it judges the same ones)."""
        return True

    @abstractmethod
    def judge(self, targets: Sequence[Target], models: Models) -> Sequence[Judgement | None]:
        """One judgement per target, in order.

        ``None`` drops a target that is outside the evaluator's scope (no result at all, e.g. a tool-call
        evaluator on a turn without calls); :meth:`Judgement.not_applicable` reports one it should judge but
        cannot.
        """

    def passes(self, score: float) -> bool:
        return score >= self.threshold if self.higher_is_better else score < self.threshold


class PerTargetEvaluator(Evaluator):
    """An evaluator that judges each target on its own, as most do: implement :meth:`judge_one`."""

    def judge(self, targets: Sequence[Target], models: Models) -> list[Judgement | None]:
        return [self.judge_one(target, models) for target in targets]

    @abstractmethod
    def judge_one(self, target: Target, models: Models) -> Judgement | None:
        """The judgement of one target, or ``None`` to skip it."""
