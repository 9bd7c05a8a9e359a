"""Custom evaluators: a Python function, a regex or keyword rule, reference similarity, or your own judge.

All of them produce the same :class:`EvaluatorResult` and appear in every report. In Python::

    @evaluator("Custom.MentionsOrderId", level="trace")
    def mentions_order(target: Target) -> float:
        return 1.0 if "#W" in target.turn.output else 0.0

In a suite file, ``type = "regex" | "keywords" | "reference_similarity" | "judge"`` builds one of the classes
below; ``judge = "package.module:function"`` names an application-supplied callable (e.g. an LLM judge).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentcore.errors import ConfigError
from agentcore.evaluations.base import Evaluator, Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.errors import EvaluationError
from agentcore.evaluations.models import Models
from agentcore.evaluations.registry import register
from agentcore.evaluations.result import FIVE, YES_NO, Level, Scale
from agentcore.references import load_reference
from agentcore.text import canonical_text

JudgeOutput = float | tuple[float, str] | Judgement


def _as_judgement(value: JudgeOutput, source: str) -> Judgement:
    if isinstance(value, Judgement):
        judgement = value
    elif isinstance(value, tuple):
        judgement = Judgement(float(value[0]), str(value[1]))
    elif isinstance(value, (int, float)):
        judgement = Judgement(float(value), f"{source} returned {float(value):.3f}")
    else:
        raise EvaluationError(
            f"{source} must return a float, (float, explanation) or Judgement, not {type(value).__name__}"
        )
    if not 0.0 <= judgement.score <= 1.0:
        raise EvaluationError(f"{source} returned score {judgement.score}; scores must lie in [0, 1]")
    return judgement


class FunctionEvaluator(PerTargetEvaluator):
    """Wraps ``function(target) -> float | (float, explanation) | Judgement``."""

    def __init__(
        self, evaluator_id: str, function: Callable[[Target], JudgeOutput], level: Level, scale: Scale
    ) -> None:
        self.id = evaluator_id  # type: ignore[misc]
        self.level = level  # type: ignore[misc]
        self.scale = scale  # type: ignore[misc]
        self.description = (function.__doc__ or evaluator_id).strip().splitlines()[0]  # type: ignore[misc]
        self._function = function

    def judge_one(self, target: Target, models: Models) -> Judgement:
        return _as_judgement(self._function(target), self.id)


def evaluator(
    evaluator_id: str, *, level: str | Level = Level.TRACE, scale: Scale = YES_NO
) -> Callable[[Callable[[Target], JudgeOutput]], Callable[[Target], JudgeOutput]]:
    """Decorator: register a function as evaluator ``evaluator_id`` (usable in suites by that id)."""

    def wrap(function: Callable[[Target], JudgeOutput]) -> Callable[[Target], JudgeOutput]:
        class _Registered(FunctionEvaluator):
            id = evaluator_id

            def __init__(self) -> None:
                super().__init__(evaluator_id, function, Level(level), scale)

        register(_Registered)
        return function

    return wrap


class RuleSpec(BaseModel):
    """Settings of a suite-defined custom evaluator (``[[evaluators]]`` entries with a ``type``)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    type: str
    level: Level = Level.TRACE
    field: str = "output"
    pattern: str | None = None
    must_match: bool = True
    keywords: list[str] = []
    mode: str = "all"
    judge: str | None = None


def _canonical(value: Any) -> Any:
    """``value`` with each string (keys too) canonical: ``ｒｅｆｕｎｄ`` and ``re\u200bfund`` are ``refund``."""
    if isinstance(value, str):
        return canonical_text(value)
    if isinstance(value, dict):
        return {_canonical(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    return value


def _field(target: Target, name: str) -> str:
    """The field a rule reads, in canonical form (NFKC, no invisible characters): the agent under test writes
    these texts, and a look-alike spelling must not slip past a rule that forbids a word."""
    if target.call is not None and name in ("arguments", "result"):
        return str(_canonical(getattr(target.call, name)))
    trace = target.turn
    if name == "context":
        return canonical_text("\n".join(trace.documents))
    value = getattr(trace, name, None)
    if not isinstance(value, str):
        raise EvaluationError(
            f"unknown field {name!r}; use output, input, system, context (or arguments/result for tool calls)"
        )
    return canonical_text(value)


class RegexEvaluator(PerTargetEvaluator):
    """Passes when ``pattern`` matches (or, with ``must_match = false``, does not match) the field."""

    scale = YES_NO

    def __init__(self, spec: RuleSpec) -> None:
        if spec.pattern is None:
            raise EvaluationError(f"custom evaluator {spec.id!r}: type 'regex' needs 'pattern'")
        self.id, self.level, self.description = spec.id, spec.level, f"regex {spec.pattern!r} on {spec.field}"  # type: ignore[misc]
        self.spec = spec
        self._pattern = re.compile(spec.pattern, re.IGNORECASE | re.MULTILINE)

    def judge_one(self, target: Target, models: Models) -> Judgement:
        found = self._pattern.search(_field(target, self.spec.field))
        ok = bool(found) == self.spec.must_match
        return Judgement(1.0 if ok else 0.0, f"matched {found.group(0)!r}" if found else "no match")


class KeywordEvaluator(PerTargetEvaluator):
    """Share of ``keywords`` present (``mode = "all"``), any present (``"any"``), or none present (``"none"``)."""

    scale = YES_NO

    def __init__(self, spec: RuleSpec) -> None:
        if not spec.keywords or spec.mode not in ("all", "any", "none"):
            raise EvaluationError(
                f"custom evaluator {spec.id!r}: type 'keywords' needs 'keywords' and mode all|any|none"
            )
        self.id, self.level, self.description = spec.id, spec.level, f"keywords ({spec.mode}) on {spec.field}"  # type: ignore[misc]
        self.spec = spec

    def judge_one(self, target: Target, models: Models) -> Judgement:
        text = _field(target, self.spec.field).lower()
        present = [word for word in self.spec.keywords if canonical_text(word).lower() in text]
        if self.spec.mode == "all":
            score = 1.0 if len(present) == len(self.spec.keywords) else 0.0
        elif self.spec.mode == "any":
            score = 1.0 if present else 0.0
        else:
            score = 0.0 if present else 1.0
        return Judgement(score, f"present: {present}")


class ReferenceSimilarity(PerTargetEvaluator):
    """MiniLM similarity of the response to ``reference.expected_response`` on the 5-level scale."""

    scale = FIVE

    def __init__(self, spec: RuleSpec) -> None:
        self.id, self.level, self.description = spec.id, Level.TRACE, "similarity to the expected response"  # type: ignore[misc]

    def texts(self, target: Target) -> list[str]:
        reference = target.turn.reference
        expected = reference.expected_response if reference is not None else None
        return [target.turn.output, expected] if expected else []

    def judge_one(self, target: Target, models: Models) -> Judgement:
        texts = self.texts(target)
        if not texts:
            return Judgement(0.0, "no reference.expected_response to compare with")
        output, expected = models.embed(texts)
        similarity = float(output @ expected)
        return Judgement(max(0.0, similarity), f"cosine similarity to the expected response {similarity:.2f}")


class JudgeEvaluator(FunctionEvaluator):
    """Calls an application-supplied judge ``f(target) -> float | (float, explanation) | Judgement``."""

    def __init__(self, spec: RuleSpec, judge: Callable[[Target], JudgeOutput] | None = None) -> None:
        super().__init__(spec.id, judge or load_callable(spec.judge, spec.id), spec.level, YES_NO)
        self.description = f"judge {spec.judge}"  # type: ignore[misc]


def load_callable(reference: str | None, owner: str) -> Callable[..., Any]:
    """Import ``package.module:function`` (the judge named in a suite file)."""
    try:
        target = load_reference(reference, f"custom evaluator {owner!r}: judge")
    except ConfigError as error:
        raise EvaluationError(str(error)) from None
    if not callable(target):
        raise EvaluationError(f"custom evaluator {owner!r}: {reference!r} is not callable")
    return target


_RULE_TYPES: dict[str, type[Evaluator]] = {
    "regex": RegexEvaluator,
    "keywords": KeywordEvaluator,
    "reference_similarity": ReferenceSimilarity,
    "judge": JudgeEvaluator,
}


def build_rule(spec: RuleSpec) -> Evaluator:
    """The custom evaluator a suite entry describes."""
    kind = _RULE_TYPES.get(spec.type)
    if kind is None:
        raise EvaluationError(f"custom evaluator {spec.id!r}: unknown type {spec.type!r}; use {', '.join(_RULE_TYPES)}")
    return kind(spec)  # type: ignore[call-arg]
