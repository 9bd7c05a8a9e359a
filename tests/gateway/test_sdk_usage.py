"""The model SDK adapters charge each response's token usage to the gateway's ledger (Gateway.record_llm_usage):
once per response, to the caller of the turn, with an opt-out; on the SDKs' own typed responses and botocore's
Stubber for Bedrock Converse."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore import Gateway, ToolDenied
from agentcore.accel.ledger import Ledger
from agentcore.accel.serving.usage import STAND_IN_LLM
from agentcore.gateway.adapters import (
    arun_anthropic_tool_uses,
    arun_bedrock_tool_uses,
    arun_openai_response_calls,
    arun_openai_tool_calls,
    bedrock_tools,
    run_anthropic_tool_uses,
    run_bedrock_tool_uses,
    run_openai_response_calls,
    run_openai_tool_calls,
)

pytest.importorskip("openai.types")
pytest.importorskip("anthropic.types")
boto3 = pytest.importorskip("boto3")

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
LOOKUP = {"customer_id": "c1"}
CALLER = {"principal": SUPPORT, "agent": "support-bot", "tenant": "acme"}


def chat_completion(model: str = "gpt-4o", prompt: int = 1200, completion: int = 80) -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": 1000}},  # included in prompt_tokens
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "crm_lookup", "arguments": json.dumps(LOOKUP)}}
            ]}}],
        }
    )  # fmt: skip


def response() -> Any:
    from openai.types.responses import Response

    return Response.model_validate(
        {
            "id": "resp_1", "created_at": 1, "model": "llama-3.1-8b", "object": "response", "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940,
                      "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
            "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "crm_lookup",
                        "arguments": json.dumps(LOOKUP)}],
        }
    )  # fmt: skip


def anthropic_message() -> Any:
    from anthropic.types import Message

    return Message.model_validate(
        {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-test",
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 300, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 500,
                      "output_tokens": 60},  # the cached prompt tokens are not in input_tokens
            "content": [{"type": "tool_use", "id": "t1", "name": "crm_lookup", "input": LOOKUP}],
        }
    )  # fmt: skip


def converse(gw: Gateway) -> dict[str, Any]:
    """A real boto3 ``converse`` call answered by botocore's Stubber (it validates the reply's shape)."""
    from botocore.stub import Stubber

    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
    reply = {
        "output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "b1", "name": "crm_lookup", "input": LOOKUP}}]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 700, "outputTokens": 30, "totalTokens": 1730, "cacheReadInputTokens": 1000},
        "metrics": {"latencyMs": 1},
        "ResponseMetadata": {"RequestId": "req-1", "HTTPStatusCode": 200, "HTTPHeaders": {}, "RetryAttempts": 0},
    }  # fmt: skip
    with Stubber(client) as stub:
        stub.add_response("converse", reply)
        answer: dict[str, Any] = client.converse(
            modelId="anthropic.claude-test", messages=[{"role": "user", "content": [{"text": "Look up c1"}]}],
            toolConfig={"tools": bedrock_tools(gw, SUPPORT)},
        )  # fmt: skip
    return answer


def receipts(ledger: Ledger, tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "receipts.json"
    ledger.export(path)
    rows: list[dict[str, Any]] = json.loads(path.read_text())
    return [row for row in rows if row["kind"] == "llm"]


def usage_row(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["model"], row["input_tokens"], row["output_tokens"], row["user"], row["agent"], row["tenant"]


def test_each_sdk_response_is_charged_once_to_the_caller(make_gateway: Factory, tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path / "ledger.db"))
    gw, runs = make_gateway(ledger=ledger)
    chat, reply, message, answer = chat_completion(), response(), anthropic_message(), converse(gw)
    for _ in range(2):  # a response handled twice (its object, then its dict form) is charged once
        run_openai_tool_calls(gw, chat, **CALLER)
        run_openai_tool_calls(gw, chat.model_dump(), **CALLER)
        run_openai_response_calls(gw, reply, **CALLER)
        run_anthropic_tool_uses(gw, message.model_dump(), **CALLER)
        run_bedrock_tool_uses(gw, answer, **CALLER)
    assert [usage_row(r) for r in receipts(ledger, tmp_path)] == [
        (STAND_IN_LLM, 1200, 80, "alice", "support-bot", "acme"),  # gpt-4o: outside the catalogue
        ("llama-3.1-8b", 900, 40, "alice", "support-bot", "acme"),  # a catalogue model is priced as itself
        (STAND_IN_LLM, 1000, 60, "alice", "support-bot", "acme"),
        (STAND_IN_LLM, 1700, 30, "alice", "support-bot", "acme"),  # Bedrock names no model in its response
    ]
    assert runs == {"crm.lookup": 10}  # every handling still runs the calls
    assert ledger.spend(user="alice", kind="llm").usd > 0


def test_messages_and_calls_carry_no_usage_and_the_opt_out_records_nothing(
    make_gateway: Factory, tmp_path: Path
) -> None:
    ledger = Ledger(str(tmp_path / "ledger.db"))
    gw, runs = make_gateway(ledger=ledger)
    chat, message = chat_completion(), anthropic_message()
    run_openai_tool_calls(gw, chat.choices[0].message, principal=SUPPORT)
    run_openai_tool_calls(gw, chat.choices[0].message.tool_calls, principal=SUPPORT)
    run_anthropic_tool_uses(gw, message.content, principal=SUPPORT)
    run_openai_tool_calls(gw, chat, principal=SUPPORT, record_usage=False)
    run_anthropic_tool_uses(gw, message, principal=SUPPORT, record_usage=False)
    assert receipts(ledger, tmp_path) == [] and runs == {"crm.lookup": 5}
    bare, _ = make_gateway()  # without a ledger there is nothing to charge: the calls run as ever
    assert json.loads(run_openai_tool_calls(bare, chat, principal=SUPPORT)[0]["content"])["tier"] == "gold"


def test_async_adapters_charge_the_same_way(make_gateway: Factory, tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path / "ledger.db"))
    gw, runs = make_gateway(ledger=ledger)
    chat, reply, message, answer = chat_completion(), response(), anthropic_message(), converse(gw)

    async def turn() -> None:
        for _ in range(2):
            await arun_openai_tool_calls(gw, chat, **CALLER)
            await arun_openai_response_calls(gw, reply, **CALLER)
            await arun_anthropic_tool_uses(gw, message, **CALLER)
            await arun_bedrock_tool_uses(gw, answer, **CALLER)

    asyncio.run(turn())
    assert [r["input_tokens"] for r in receipts(ledger, tmp_path)] == [1200, 900, 1000, 1700]
    assert runs == {"crm.lookup": 8}


def test_charged_usage_counts_in_spend_budgets_before_the_turns_calls(make_gateway: Factory, tmp_path: Path) -> None:
    policy = (
        'policy "budget"\nallow crm.lookup for users with role "support".\n'
        "deny any tool when accelerator spend of user today exceeds 0.0001 USD.\n"
    )
    ledger = Ledger(str(tmp_path / "ledger.db"))
    gw, runs = make_gateway(ledger=ledger, policy=policy)
    big = chat_completion(model="llama-3.1-405b", prompt=400_000, completion=40_000)
    (reply,) = run_openai_tool_calls(gw, big, principal=SUPPORT)
    assert ledger.spend(user="alice").usd > 0.0001
    assert "denied by policy" in reply["content"] and runs == {}  # the turn that spent it is over budget
    with pytest.raises(ToolDenied, match="spend"):
        gw.call("crm.lookup", LOOKUP, principal=SUPPORT)
    assert gw.call("crm.lookup", LOOKUP, principal={"id": "bob", "roles": ["support"]})["tier"] == "gold"


def test_malformed_usage_is_a_clear_error_and_runs_nothing(make_gateway: Factory, tmp_path: Path) -> None:
    gw, runs = make_gateway(ledger=Ledger(str(tmp_path / "ledger.db")))
    broken = chat_completion().model_dump()
    broken["usage"]["completion_tokens"] = -3
    with pytest.raises(ValueError, match=r"usage\.completion_tokens must be a non-negative integer"):
        run_openai_tool_calls(gw, broken, principal=SUPPORT)
    assert runs == {}
