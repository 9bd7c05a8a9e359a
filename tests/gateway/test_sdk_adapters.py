"""The adapters take the SDKs' own objects (OpenAI, Anthropic, Bedrock Converse through botocore's Stubber) and
their dict forms, and produce what the SDKs' typed params accept."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from agentcore import Gateway, ToolDenied
from agentcore.gateway.adapters import (
    anthropic_tools,
    arun_anthropic_tool_uses,
    arun_bedrock_tool_uses,
    arun_openai_response_calls,
    arun_openai_tool_calls,
    bedrock_tools,
    openai_tools,
    run_anthropic_tool_uses,
    run_bedrock_tool_uses,
    run_openai_response_calls,
    run_openai_tool_calls,
)

openai_types = pytest.importorskip("openai.types")
anthropic_types = pytest.importorskip("anthropic.types")
boto3 = pytest.importorskip("boto3")

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
CALLS = [  # (id, exposed name, arguments): allowed and redacted, denied, malformed, pending approval
    ("c1", "crm_lookup", {"customer_id": "c1"}),
    ("c2", "vault_read", {"key": "k"}),
    ("c3", "crm_lookup", '{"customer_id": '),
    ("c4", "refunds_issue", {"order_id": "o", "amount": 900}),
]
DEVELOPER_TEXT = ("acall()", "Traceback", "list_tools()", "agentcore gateway approvals")


def assert_model_sees_today_texts(texts: list[str]) -> None:
    assert json.loads(texts[0])["email"] == "[REDACTED:email]"
    assert texts[1].startswith("Error: Tool call 'vault.read' was denied by policy")
    assert "malformed" in texts[2]
    assert texts[3].startswith("Pending human approval (apr_")
    assert not any(marker in text for text in texts for marker in DEVELOPER_TEXT)


def arguments(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def test_openai_tools_are_valid_chat_completions_and_responses_tools(
    make_gateway: Factory, check_typed: Callable[[Any, Any], None]
) -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam

    gw, _ = make_gateway()
    chat, responses = openai_tools(gw, SUPPORT), openai_tools(gw, SUPPORT, api="responses")
    assert {t["function"]["name"] for t in chat} == {t["name"] for t in responses} >= {"crm_lookup"}
    for tool in chat:
        check_typed(tool, ChatCompletionFunctionToolParam)
    for tool in responses:
        check_typed(tool, FunctionToolParam)
    with pytest.raises(ValueError, match="'chat' or 'responses'"):
        openai_tools(gw, SUPPORT, api="assistants")  # type: ignore[arg-type]


def test_chat_completion_objects_message_and_tool_calls(
    make_gateway: Factory, check_typed: Callable[[Any, Any], None]
) -> None:
    from openai.types.chat import ChatCompletion, ChatCompletionToolMessageParam

    gw, runs = make_gateway()
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": arguments(a)}}
                               for i, n, a in CALLS],
            }}],
        }
    )  # fmt: skip
    message = completion.choices[0].message
    shapes = [completion, message, message.tool_calls, message.model_dump(), completion.model_dump()]
    for shape in shapes:
        replies = run_openai_tool_calls(gw, shape, principal=SUPPORT)
        assert [r["tool_call_id"] for r in replies] == ["c1", "c2", "c3", "c4"]
        for reply in replies:
            check_typed(reply, ChatCompletionToolMessageParam)
        assert_model_sees_today_texts([r["content"] for r in replies])
    assert runs == {"crm.lookup": len(shapes)}


def test_responses_function_calls_answer_by_call_id(
    make_gateway: Factory, check_typed: Callable[[Any, Any], None]
) -> None:
    from openai.types.responses import Response
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    gw, runs = make_gateway()
    response = Response.model_validate(
        {
            "id": "resp_1", "created_at": 1, "model": "gpt-test", "object": "response", "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": openai_tools(gw, SUPPORT, api="responses"),
            "output": [{"type": "reasoning", "id": "rs_1", "summary": []}] + [
                {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": n, "arguments": arguments(a)}
                for i, n, a in CALLS
            ],
        }
    )  # fmt: skip
    for shape in (response, response.output, response.model_dump()):
        outputs = run_openai_response_calls(gw, shape, principal=SUPPORT)
        assert [o["call_id"] for o in outputs] == ["call_c1", "call_c2", "call_c3", "call_c4"]  # not the item ids
        for output in outputs:
            check_typed(output, FunctionCallOutput)
        assert_model_sees_today_texts([o["output"] for o in outputs])
    assert runs == {"crm.lookup": 3}


def test_anthropic_message_and_tool_use_blocks(make_gateway: Factory, check_typed: Callable[[Any, Any], None]) -> None:
    from anthropic.types import Message, ToolParam, ToolResultBlockParam

    gw, runs = make_gateway()
    for tool in anthropic_tools(gw, SUPPORT):
        check_typed(tool, ToolParam)
    message = Message.model_validate(
        {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "text", "text": "Let me check."}] + [
                {"type": "tool_use", "id": i, "name": n, "input": a if isinstance(a, dict) else {"raw": a}}
                for i, n, a in CALLS
            ],
        }
    )  # fmt: skip
    for shape in (message, message.content, message.model_dump()):
        reply = run_anthropic_tool_uses(gw, shape, principal=SUPPORT)
        assert [b["tool_use_id"] for b in reply["content"]] == ["c1", "c2", "c3", "c4"]
        for block in reply["content"]:
            check_typed(block, ToolResultBlockParam)
        first, *errors = reply["content"]
        assert "is_error" not in first and all(b["is_error"] for b in errors)
        assert "invalid arguments" in errors[1]["content"]
    assert runs == {"crm.lookup": 3}


def bedrock_client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def converse_reply(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def test_bedrock_converse_round_trip_through_botocore_stubber(make_gateway: Factory) -> None:
    from botocore.stub import ANY, Stubber

    gw, runs = make_gateway()
    client = bedrock_client()
    uses = [{"toolUse": {"toolUseId": i, "name": n, "input": a if isinstance(a, dict) else {"raw": a}}}
            for i, n, a in CALLS]  # fmt: skip
    tools = {"tools": bedrock_tools(gw, SUPPORT)}
    question = {"role": "user", "content": [{"text": "Look up c1"}]}
    with Stubber(client) as stub:  # botocore validates both requests and replies against the service model
        stub.add_response("converse", converse_reply(uses, "tool_use"), {"modelId": "m", "messages": ANY,
                                                                          "toolConfig": tools})  # fmt: skip
        stub.add_response("converse", converse_reply([{"text": "done"}], "end_turn"), None)
        first = client.converse(modelId="m", messages=[question], toolConfig=tools)
        results = run_bedrock_tool_uses(gw, first, principal=SUPPORT)
        messages = [question, first["output"]["message"], results]
        second = client.converse(modelId="m", messages=messages, toolConfig=tools)
        stub.assert_no_pending_responses()
    assert second["stopReason"] == "end_turn"
    blocks = [b["toolResult"] for b in results["content"]]
    assert [b["toolUseId"] for b in blocks] == ["c1", "c2", "c3", "c4"]
    assert [b["status"] for b in blocks] == ["success", "error", "error", "error"]
    assert json.loads(blocks[0]["content"][0]["text"])["card"] == "[REDACTED:card]"
    malformed_only = run_bedrock_tool_uses(gw, first["output"]["message"]["content"][2:3], principal=SUPPORT)
    assert [b["toolResult"]["toolUseId"] for b in malformed_only["content"]] == ["c3"]  # content lists work too
    assert runs == {"crm.lookup": 1}


def test_async_adapters_run_async_tools_inside_the_event_loop(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    note = {"text": "hello"}
    chat = [{"id": "c1", "type": "function", "function": {"name": "notes_add", "arguments": json.dumps(note)}}]
    responses = [{"type": "function_call", "call_id": "r1", "name": "notes_add", "arguments": json.dumps(note)}]
    blocks = [{"type": "tool_use", "id": "t1", "name": "notes_add", "input": note}]
    converse = [{"toolUse": {"toolUseId": "b1", "name": "notes_add", "input": note}}]

    async def agent_loop() -> list[str]:  # notes.add allows 3 calls a minute per user: one user per adapter
        chat_reply = await arun_openai_tool_calls(gw, chat, principal="u1")
        response_reply = await arun_openai_response_calls(gw, responses, principal="u2")
        anthropic_reply = await arun_anthropic_tool_uses(gw, blocks, principal="u3")
        bedrock_reply = await arun_bedrock_tool_uses(gw, converse, principal="u4")
        sync_reply = run_openai_tool_calls(gw, chat, principal="u5")  # sync adapter in a loop: runs in a thread
        return [
            chat_reply[0]["content"],
            response_reply[0]["output"],
            anthropic_reply["content"][0]["content"],
            bedrock_reply["content"][0]["toolResult"]["content"][0]["text"],
            sync_reply[0]["content"],
        ]

    assert asyncio.run(agent_loop()) == ["hello"] * 5
    assert runs == {"notes.add": 5}


def test_a_failing_tool_reads_as_today_and_bad_input_is_a_type_error(make_gateway: Factory) -> None:
    gw, _ = make_gateway(policy='policy "flaky" version 1 owner "t"\n\nallow crm.flaky.\n')

    @gw.tool(name="crm.flaky")
    def flaky() -> str:
        raise RuntimeError("backend down")

    reply = run_openai_tool_calls(gw, [{"id": "c1", "function": {"name": "crm_flaky"}}], principal="bob")
    assert reply == [
        {"role": "tool", "tool_call_id": "c1", "content": "Error: tool 'crm.flaky' failed: RuntimeError: backend down"}
    ]
    with pytest.raises(TypeError, match="expected a message"):
        run_openai_tool_calls(gw, 42, principal=SUPPORT)


def test_failure_details_reach_the_developer_never_the_model(make_gateway: Factory, monkeypatch: Any) -> None:
    gw, runs = make_gateway()

    @gw.resolver("order")
    def broken(order_id: Any) -> dict[str, Any]:
        raise ConnectionError("connect failed: postgresql://admin:hunter2@db.internal/orders")

    cancel = [{"id": "c1", "function": {"name": "orders_cancel", "arguments": '{"order_id": "o1"}'}}]
    (reply,) = run_openai_tool_calls(gw, cancel, principal=SUPPORT)
    assert "denied by policy" in reply["content"] and "failed closed: it could not be evaluated" in reply["content"]
    assert "hunter2" not in reply["content"] and "ConnectionError" not in reply["content"]
    with pytest.raises(ToolDenied, match="hunter2"):  # the Python caller still sees what failed
        gw.call("orders.cancel", {"order_id": "o1"}, principal=SUPPORT)
    lookup = [{"id": "c2", "function": {"name": "crm_lookup", "arguments": '{"customer_id": "c1"}'}}]
    with pytest.raises(TypeError, match="principal must be"):  # a developer's mistake raises, never a reply
        run_openai_tool_calls(gw, lookup, principal=12345)  # type: ignore[arg-type]

    def corrupt() -> None:
        raise RuntimeError("bundle cache is corrupt")

    monkeypatch.setattr(gw.policy, "current", corrupt)
    (internal,) = run_openai_tool_calls(gw, lookup, principal=SUPPORT)  # an internal error while deciding
    assert internal["content"] == (
        "Error: Tool call 'crm.lookup' was denied by policy: the gateway could not decide it. Do not retry it."
    )
    assert runs == {}
