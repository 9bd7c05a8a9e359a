"""OpenAI / Anthropic adapters and model-safe tool names."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agentcore import Gateway
from agentcore.gateway.adapters import anthropic_tools, openai_tools, run_anthropic_tool_uses, run_openai_tool_calls
from agentcore.gateway.naming import MAX_LEN, exposed_name, name_map

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_names_are_model_safe_deterministic_and_unique() -> None:
    assert exposed_name("crm.lookup") == "crm_lookup"
    assert exposed_name("lookup", prefix="crm-prod") == "crm-prod__lookup"
    target = "a-very-long-target-name-that-eats-the-budget"
    long = exposed_name("tool." + "x" * 100, prefix=target)
    assert len(long) == MAX_LEN and SAFE.match(long) and long == exposed_name("tool." + "x" * 100, prefix=target)
    tools = [(None, "a.b_c"), (None, "a_b.c"), ("t", "x"), (None, "t__x"), (None, "plain")]
    names = name_map(tools)
    assert len(names) == 5 and all(SAFE.match(n) for n in names)
    assert sorted(names.values(), key=str) == sorted(tools, key=str)
    assert names["plain"] == (None, "plain")  # names without collisions stay readable


def test_openai_tool_calls(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    definitions = openai_tools(gw, SUPPORT)
    names = {d["function"]["name"] for d in definitions}
    assert "crm_lookup" in names and "vault_read" not in names
    lookup = next(d for d in definitions if d["function"]["name"] == "crm_lookup")
    assert lookup["function"]["parameters"]["required"] == ["customer_id"]
    calls = [
        ("call_1", "crm_lookup", '{"customer_id": "c1"}'),
        ("call_2", "vault_read", '{"key": "k"}'),
        ("call_3", "crm_lookup", '{"customer_id": '),
        ("call_4", "refunds_issue", '{"order_id": "o", "amount": 900}'),
    ]
    message = {
        "role": "assistant",
        "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls],
    }
    replies = run_openai_tool_calls(gw, message, principal=SUPPORT, session="s1")
    assert [r["tool_call_id"] for r in replies] == ["call_1", "call_2", "call_3", "call_4"]
    assert all(r["role"] == "tool" for r in replies)
    assert json.loads(replies[0]["content"])["email"] == "[REDACTED:email]"
    assert replies[1]["content"].startswith("Error: Tool call 'vault.read' was denied by policy")
    assert "malformed" in replies[2]["content"]
    assert "Pending human approval (apr_" in replies[3]["content"]
    assert runs == {"crm.lookup": 1}


def test_anthropic_tool_use(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    assert {"name", "description", "input_schema"} <= set(anthropic_tools(gw, SUPPORT)[0])
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "orders_cancel", "input": {"order_id": "o1"}},
            {"type": "tool_use", "id": "toolu_2", "name": "orders_cancel", "input": {"order_id": "o2"}},
            {"type": "tool_use", "id": "toolu_3", "name": "no_such_tool", "input": {}},
        ],
    }
    reply = run_anthropic_tool_uses(gw, message, principal=SUPPORT)
    assert reply["role"] == "user"
    first, second, third = reply["content"]
    assert first == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "cancelled o1"}
    assert second["is_error"] is True and "denied by policy" in second["content"]
    assert third["is_error"] is True and "unknown tool" in third["content"]
    assert runs == {"orders.cancel": 1}


def test_hostile_argument_texts_are_audited_refusals_and_the_turn_goes_on(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    refund = '{{"order_id": "o", "amount": {}}}'
    texts = {
        "deep": "[" * 100_000 + "]" * 100_000,  # past json's recursion limit: RecursionError, not JSONDecodeError
        "digits": refund.format("9" * 5000),  # past Python's int digit limit: ValueError, not JSONDecodeError
        "nan": refund.format("NaN"),
        "overflow": refund.format("1e400"),
        "list": "[]",
        "first_wins": '{"order_id": "o", "amount": 99999, "amount": 1}',  # duplicate keys: the last one counts...
        "last_wins": '{"order_id": "o", "amount": 1, "amount": 99999}',
    }
    calls = [{"id": i, "function": {"name": "refunds_issue", "arguments": a}} for i, a in texts.items()]
    replies = {r["tool_call_id"]: r["content"] for r in run_openai_tool_calls(gw, calls, principal=SUPPORT)}
    for call_id in ("deep", "digits", "nan", "overflow", "list"):
        assert replies[call_id].startswith("Error: invalid arguments for 'refunds.issue'"), call_id
    assert json.loads(replies["first_wins"]) == {"order_id": "o", "refunded": 1}  # ...for the policy and the tool
    assert "denied by policy" in replies["last_wins"]
    assert runs == {"refunds.issue": 1}
    decisions = [row["effect"] for row in gw.audit.rows() if row["kind"] == "decision"]
    assert decisions == ["deny"] * 5 + ["allow", "deny"]  # every call, refused ones too, is in the audit


def test_a_result_json_cannot_hold_still_answers_its_call_and_the_turn_goes_on(make_gateway: Factory) -> None:
    gw, _ = make_gateway(policy='policy "odd" version 1 owner "t"\n\nallow odd.result.\n')
    circular: list[Any] = []
    circular.append(circular)
    results = {"tuple_key": {(1, 2): "x"}, "a_set": {"ids": {7}}, "circular": circular}
    ran: list[str] = []

    @gw.tool(name="odd.result")
    def odd(kind: str) -> Any:
        ran.append(kind)
        return results[kind]

    calls = [{"id": k, "function": {"name": "odd_result", "arguments": json.dumps({"kind": k})}} for k in results]
    replies = [r["content"] for r in run_openai_tool_calls(gw, calls, principal="bob")]  # json.dumps raised here
    assert replies[:2] == ['{"1,2": "x"}', '{"ids": [7]}']
    assert replies[2].startswith("Error: the tool ran, but its result cannot be shown") and ran == list(results)


def test_a_tool_named_like_anothers_hashed_name_takes_no_name_away() -> None:
    """``a.b`` and ``a_b`` clash, so ``a.b`` is named ``a_b_<hash>``; a third tool registered under exactly that
    name used to overwrite it: ``a.b`` had no exposed name (the tool list raised KeyError) and its listed name
    reached the other tool."""
    hashed = name_map([(None, "a.b"), (None, "a_b")])
    taken = next(name for name, pair in hashed.items() if pair == (None, "a.b"))
    for tools in ([(None, "a.b"), (None, "a_b"), (None, taken)], [(None, taken), (None, "a.b"), (None, "a_b")]):
        names = name_map(tools)
        assert sorted(names.values(), key=str) == sorted(tools, key=str) and all(SAFE.match(n) for n in names)
