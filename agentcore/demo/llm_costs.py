"""What the demo's conversations would cost if an LLM drove them: token counts assumed, serving simulated.

The demo's agent is scripted, so its conversations carry no provider token counts. A tool-calling LLM
agent would make one model call per tool call plus one for the reply, each reading the system prompt,
the tool schemas and the whole conversation so far, and writing the tool call (JSON) or the reply. This
module adds those calls to each session as model-call spans with token counts estimated at
``CHARS_PER_TOKEN`` characters per token (OpenAI's rule of thumb for English), so the same pricing path
as ``agentcore accel price-traces`` applies: Llama 3.1 70B served on Trn2, Trn3 and H100 (simulated).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from pydantic import BaseModel

from agentcore.accel.serving.pricing import DEFAULT_SHAPE, card_for
from agentcore.accel.serving.usage import shipped_catalogues
from agentcore.evaluations.llm_cost import TraceCost, mean_call_shape, price_sessions
from agentcore.evaluations.trace import ModelCall, Session, Trace

MODEL = "llama-3.1-70b"
DEVICES = ("trn2", "trn3", "h100")
CHARS_PER_TOKEN = 4
SYSTEM_PROMPT_TOKENS = 600  # assumed instructions and policies of a customer-service agent


class LLMCosts(BaseModel):
    """Priced conversations plus the assumptions behind their token counts."""

    assumptions: str
    cost: TraceCost


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def with_llm_calls(session: Session) -> Session:
    """``session`` with the model calls an LLM agent would have made, their token counts estimated."""
    context = SYSTEM_PROMPT_TOKENS + _tokens(json.dumps([tool.model_dump() for tool in session.tools]))
    traces: list[Trace] = []
    for trace in session.traces:
        context += _tokens(trace.input)
        calls: list[ModelCall] = []
        for call in trace.tool_calls:
            request = _tokens(json.dumps({"name": call.name, "arguments": call.arguments}, default=str))
            calls.append(_call(trace, len(calls), context, request))
            context += request + _tokens(json.dumps(call.result, default=str))
        reply = _tokens(trace.output)
        calls.append(_call(trace, len(calls), context, reply))
        context += reply
        traces.append(trace.model_copy(update={"spans": [*trace.spans, *calls]}))
    return session.model_copy(update={"traces": traces})


def _call(trace: Trace, index: int, input_tokens: int, output_tokens: int) -> ModelCall:
    return ModelCall(
        id=f"{trace.id}/llm-{index + 1}", model=MODEL, input_tokens=input_tokens, output_tokens=output_tokens
    )


def price_conversations(sessions: Sequence[Session]) -> tuple[LLMCosts, list[Session]]:
    """Price the demo's conversations on each of :data:`DEVICES`; returns the costs and the sessions priced."""
    priced = [with_llm_calls(session) for session in sessions]
    shape = mean_call_shape(priced, DEFAULT_SHAPE)  # rate cards at the demo's own mean call
    profiles, llms = shipped_catalogues()
    cards = {device: card_for(llms, profiles.chips[device], MODEL, shape=shape) for device in DEVICES}
    assumptions = (
        f"{MODEL} at each device's default layout (FP8), one model call per tool call plus one per reply, each "
        f"reading a {SYSTEM_PROMPT_TOKENS}-token system prompt, the tool schemas and the conversation so far; "
        f"tokens estimated at {CHARS_PER_TOKEN} characters per token; priced at the mean call of {shape[0]:,} in / "
        f"{shape[1]:,} out tokens"
    )
    return LLMCosts(assumptions=assumptions, cost=price_sessions(priced, cards)), priced
