"""InstructionFollowing: does the response follow the explicit, verifiable instructions it was given?

Instructions come from ``reference.instructions`` (IFEval ids and parameters) or, when absent, are parsed from
the system and user text by :mod:`agentcore.evaluations.instruction_parser`; each is checked by rule.
"""

from __future__ import annotations

from agentcore.evaluations.base import Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.instruction_parser import parse_instructions
from agentcore.evaluations.instructions import check_instruction
from agentcore.evaluations.models import Models
from agentcore.evaluations.registry import register
from agentcore.evaluations.result import YES_NO, Level


@register
class InstructionFollowing(PerTargetEvaluator):
    id = "Builtin.InstructionFollowing"
    level = Level.TRACE
    scale = YES_NO
    description = "the response follows the explicit instructions in the system prompt and request"

    def judge_one(self, target: Target, models: Models) -> Judgement:
        trace = target.turn
        reference = trace.reference
        instructions = reference.instructions if reference is not None and reference.instructions else None
        if instructions is None:
            instructions = parse_instructions("\n".join(filter(None, [trace.system, trace.input])))
        if not instructions:
            return Judgement.not_applicable("no verifiable instruction found in the system prompt or request")
        broken = [
            item.id for item in instructions if not check_instruction(item.id, trace.output, item.kwargs, trace.input)
        ]
        if broken:
            return Judgement(
                0.0, f"{len(broken)} of {len(instructions)} instructions not followed: {', '.join(broken)}"
            )
        return Judgement(1.0, f"all {len(instructions)} instructions followed")
