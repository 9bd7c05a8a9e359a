"""The demo's conversations priced as LLM calls: one call per tool call plus one per reply, growing context."""

from __future__ import annotations

import pytest

from agentcore.demo.llm_costs import CHARS_PER_TOKEN, SYSTEM_PROMPT_TOKENS, price_conversations, with_llm_calls
from agentcore.evaluations.trace import Session, ToolCall, Trace

SESSION = Session(
    id="s1",
    traces=[
        Trace(id="t1", input="x" * 400, output="y" * 200,
              spans=[ToolCall(id="c1", name="lookup", arguments={"id": "42"}, result={"status": "ok"})]),
        Trace(id="t2", input="z" * 80, output="w" * 120),
    ],
)  # fmt: skip


def test_each_tool_call_and_reply_is_a_model_call_reading_the_conversation_so_far() -> None:
    calls = with_llm_calls(SESSION).model_calls
    assert len(calls) == 3 and all(call.input_tokens and call.output_tokens for call in calls)
    first, reply, second_turn = calls
    assert first.input_tokens == SYSTEM_PROMPT_TOKENS + 1 + 400 // CHARS_PER_TOKEN  # prompt + "[]" tools + turn
    assert reply.input_tokens > first.input_tokens and reply.output_tokens == 200 // CHARS_PER_TOKEN
    assert second_turn.input_tokens == reply.input_tokens + 50 + 80 // CHARS_PER_TOKEN
    assert [span.id for span in with_llm_calls(SESSION).traces[0].spans] == ["c1", "t1/llm-1", "t1/llm-2"]


def test_conversations_are_priced_on_trn2_trn3_and_h100() -> None:
    costs, priced = price_conversations([SESSION])
    assert costs.cost.devices == ["trn2", "trn3", "h100"] and costs.cost.priced_calls == 3
    assert "characters per token" in costs.assumptions and priced[0].model_calls
    per = {device: costs.cost.per_session(device) for device in costs.cost.devices}
    assert all(value > 0 for value in per.values()) and per["trn3"] < per["h100"]
    assert per["trn3"] == pytest.approx(costs.cost.totals["trn3"])
