"""Tool-call evaluators: was the right tool chosen, and were its parameters right?

With ground truth (``reference.expected_tool_calls``) both are deterministic BFCL-style checks. Without it,
selection asks two things of the request and the offered tools' descriptions (MiniLM via accel): is the chosen
tool relevant to the request at all (a single offered tool is not right just because it is the only one), and
does it trail a better-matching tool; parameters are checked against the tool's schema and for grounding in what
the user and earlier tools said.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentcore.evaluations.base import Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.matching import best_match, schema_problems
from agentcore.evaluations.models import Models
from agentcore.evaluations.registry import register
from agentcore.evaluations.result import YES_NO, Level
from agentcore.evaluations.text import content_words, coverage
from agentcore.evaluations.trace import ToolSpec

#: how far (in cosine) the chosen tool may trail the best-matching offered tool before the choice is judged wrong
SELECTION_MARGIN = 0.15
#: request-tool cosine at which a call counts as relevant (score 0.5), and the span from irrelevant to relevant.
#: Set for recall on BFCL (irrelevance + live_irrelevance vs the ground-truth tools of simple/multiple): on the test
#: half it keeps 95% of relevant calls and flags 61% of irrelevant ones. The balanced-accuracy optimum (0.32: 86% /
#: 75%) rejected right calls of long multi-intent requests ("I moved, my email is …, my new address is …").
RELEVANCE_MIDPOINT, RELEVANCE_SPAN = 0.22, 0.2


def offered_tools(target: Target) -> list[ToolSpec]:
    return list(target.turn.tools or target.session.tools)


def _tool_text(tool: ToolSpec) -> str:
    return f"{tool.name.replace('_', ' ').replace('.', ' ')}: {tool.description}"


@register
class ToolSelectionAccuracy(PerTargetEvaluator):
    id = "Builtin.ToolSelectionAccuracy"
    level = Level.TOOL_CALL
    scale = YES_NO
    description = "the right tool was chosen at this point, given the request and the tools offered"

    def texts(self, target: Target) -> list[str]:
        reference = target.turn.reference
        if reference is not None and reference.expected_tool_calls is not None:
            return []
        return [target.turn.input, *map(_tool_text, offered_tools(target))]

    def judge_one(self, target: Target, models: Models) -> Judgement:
        call = target.call
        assert call is not None
        reference = target.turn.reference
        if reference is not None and reference.expected_tool_calls is not None:
            names = [item.name for item in reference.expected_tool_calls]
            if not names:
                return Judgement(0.0, f"no tool should be called here, but {call.name!r} was")
            if call.name in names:
                return Judgement(1.0, f"{call.name!r} is an expected tool")
            return Judgement(0.0, f"{call.name!r} was called; expected one of {sorted(set(names))}")
        tools = offered_tools(target)
        by_name = {tool.name: tool for tool in tools}
        if not tools:
            return Judgement.not_applicable("no reference and no list of offered tools to compare the call against")
        if call.name not in by_name:
            return Judgement(0.0, f"{call.name!r} is not among the offered tools {sorted(by_name)}")
        vectors = models.embed(self.texts(target))
        similarity = vectors[1:] @ vectors[0]
        chosen = float(similarity[[tool.name for tool in tools].index(call.name)])
        relevance = float(np.clip(0.5 + (chosen - RELEVANCE_MIDPOINT) / RELEVANCE_SPAN, 0.0, 1.0))
        best = int(np.argmax(similarity))
        gap = float(similarity[best]) - chosen
        rank = float(np.clip(1.0 - gap / SELECTION_MARGIN, 0.0, 1.0))
        why = f"{call.name!r} has request similarity {chosen:.2f}"
        if gap > 0:
            why += f" and trails the best-matching tool {tools[best].name!r} by {gap:.2f}"
        return Judgement(min(relevance, rank), why)


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [str(value)] if isinstance(value, (str, int, float)) and not isinstance(value, bool) else []


@register
class ToolParameterAccuracy(PerTargetEvaluator):
    id = "Builtin.ToolParameterAccuracy"
    level = Level.TOOL_CALL
    scale = YES_NO
    description = "the call's parameters are correctly derived from the request and context"

    def judge_one(self, target: Target, models: Models) -> Judgement:
        call = target.call
        assert call is not None
        reference = target.turn.reference
        if reference is not None and reference.expected_tool_calls is not None:
            problems = best_match(call, reference.expected_tool_calls)
            return Judgement(0.0 if problems else 1.0, "; ".join(problems) or "arguments match the expected call")
        tool = next((tool for tool in offered_tools(target) if tool.name == call.name), None)
        problems = schema_problems(call, tool) if tool is not None else []
        if problems:
            return Judgement(0.0, "; ".join(problems))
        earlier = target.history[:-1]
        said = [text for turn in earlier for text in (turn.input, turn.output, *turn.documents)]
        said += [target.turn.input, target.turn.system or "", *target.turn.context]
        known = content_words(" ".join(said))
        values = _leaves(call.arguments)
        grounded = [coverage(content_words(value), known) for value in values]
        score = float(np.mean(grounded)) if grounded else 1.0
        loose = [value for value, share in zip(values, grounded, strict=True) if share < 0.5]
        why = (
            f"values not found in the conversation: {loose}"
            if loose
            else "schema valid; values come from the conversation"
        )
        return Judgement(score, why)
