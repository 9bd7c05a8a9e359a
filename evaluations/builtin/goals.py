"""Session-level evaluators: did the session achieve the user's goals, and did it follow the expected trajectory?

GoalSuccessRate checks the ground truth it is given: every required expected action (state-changing ones, unless
marked otherwise) was performed with matching arguments and not denied or failed, every expected output was said,
every assertion is supported by an agent reply (MiniLM similarity via accel). Without goals it cannot tell success
from failure: the session is not applicable, or fails when one of its calls failed or was denied. The trajectory
matchers compare tool names, as AgentCore's do.
"""

from __future__ import annotations

from abc import abstractmethod

from agentcore.evaluations.base import Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.matching import call_problems
from agentcore.evaluations.models import Models
from agentcore.evaluations.registry import register
from agentcore.evaluations.result import YES_NO, Level
from agentcore.evaluations.text import mentions, sentences
from agentcore.evaluations.trace import ExpectedCall, Session

#: cosine between an assertion and the closest agent sentence above which the assertion counts as met
ASSERTION_SIMILARITY = 0.6
_FAILED_DECISIONS = {"deny", "denied", "needs_approval", "pending"}


def _required(action: ExpectedCall, session: Session) -> bool:
    if action.required is not None:
        return action.required
    if action.read_only is not None:
        return not action.read_only
    return not any(tool.read_only for tool in session.tools if tool.name == action.name)


def _agent_sentences(target: Target) -> list[str]:
    return [sentence for trace in target.session.traces for sentence in sentences(trace.output)]


@register
class GoalSuccessRate(PerTargetEvaluator):
    id = "Builtin.GoalSuccessRate"
    level = Level.SESSION
    scale = YES_NO
    description = "all user goals of the session were achieved"

    def texts(self, target: Target) -> list[str]:
        reference = target.session.reference
        if reference is None or not reference.assertions:
            return []
        return [*reference.assertions, *_agent_sentences(target)]

    def judge_one(self, target: Target, models: Models) -> Judgement:
        session = target.session
        calls = [
            call
            for call in session.tool_calls
            if call.error is None and (call.decision or "").lower() not in _FAILED_DECISIONS
        ]
        reference = session.reference
        expected = (reference.expected_actions or []) if reference is not None else []
        actions = [action for action in expected if _required(action, session)]
        goals = len(actions) + (len(reference.expected_outputs) + len(reference.assertions) if reference else 0)
        if reference is None or not goals:
            broken = [call.name for call in session.tool_calls if call not in calls]
            if broken:
                return Judgement(0.0, f"no goals given, and these calls failed or were denied: {broken}")
            return Judgement.not_applicable("no goals given (required expected_actions, expected_outputs, assertions)")
        missed: list[str] = []
        for action in actions:
            if not any(not call_problems(call, action) for call in calls):
                missed.append(
                    f"action {action.name}({', '.join(f'{k}={v[0]!r}' for k, v in action.arguments.items() if v)})"
                )
        said = " ".join(trace.output for trace in session.traces)
        missed.extend(f"output {text!r} never said" for text in reference.expected_outputs if not mentions(said, text))
        if reference.assertions:
            agent = _agent_sentences(target)
            if not agent:
                missed.extend(f"assertion {text!r}" for text in reference.assertions)
            else:
                similarity = models.embed(reference.assertions) @ models.embed(agent).T
                missed.extend(
                    f"assertion {text!r} (best match {row.max():.2f})"
                    for text, row in zip(reference.assertions, similarity, strict=True)
                    if row.max() < ASSERTION_SIMILARITY
                )
        if missed:
            return Judgement(0.0, f"{len(missed)} of {goals} goals not met: " + "; ".join(missed))
        return Judgement(1.0, f"all {goals} goals met")


def _subsequence(expected: list[str], actual: list[str]) -> bool:
    remaining = iter(actual)
    return all(name in remaining for name in expected)


class _Trajectory(PerTargetEvaluator):
    level = Level.SESSION
    scale = YES_NO

    def judge_one(self, target: Target, models: Models) -> Judgement | None:
        """Sessions without ``reference.expected_trajectory`` are skipped (no result), as in AgentCore."""
        reference = target.session.reference
        if reference is None or reference.expected_trajectory is None:
            return None
        expected = reference.expected_trajectory
        actual = [call.name for call in target.session.tool_calls]
        ok = self.matches(expected, actual)
        return Judgement(1.0 if ok else 0.0, f"expected {expected}, actual {actual}")

    @abstractmethod
    def matches(self, expected: list[str], actual: list[str]) -> bool:
        """Does the actual list of tool names match the expected one, in this evaluator's sense?"""


@register
class TrajectoryExactOrderMatch(_Trajectory):
    id = "Builtin.TrajectoryExactOrderMatch"
    description = "the tools called are exactly the expected ones, in the expected order"

    def matches(self, expected: list[str], actual: list[str]) -> bool:
        return expected == actual


@register
class TrajectoryInOrderMatch(_Trajectory):
    id = "Builtin.TrajectoryInOrderMatch"
    description = "the expected tools were called in the expected order (other calls may come between)"

    def matches(self, expected: list[str], actual: list[str]) -> bool:
        return _subsequence(expected, actual)


@register
class TrajectoryAnyOrderMatch(_Trajectory):
    id = "Builtin.TrajectoryAnyOrderMatch"
    description = "every expected tool was called, in any order"

    def matches(self, expected: list[str], actual: list[str]) -> bool:
        return set(expected) <= set(actual)
