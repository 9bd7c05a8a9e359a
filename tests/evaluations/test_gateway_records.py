"""The gateway's own audit export imports as sessions of tool calls with their decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore.evaluations import TraceFormatError, create_evaluator, evaluate, load_sessions
from agentcore.evaluations.models import Models

POLICY = """policy "orders" version 1 owner "evals"

allow orders.cancel for users with role "support".
deny orders.cancel when order(order_id).status is not "pending".
"""


def test_audit_export_becomes_tool_call_sessions(tmp_path: Path, models: Models) -> None:
    from agentcore.gateway import Gateway, ToolDenied

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "orders.policy").write_text(POLICY, encoding="utf-8")
    gateway = Gateway(tmp_path / "policies", database=str(tmp_path / "gw.db"))
    orders = {"o1": {"status": "pending"}, "o2": {"status": "delivered"}}

    @gateway.resolver("order")
    def load_order(order_id: str) -> dict[str, str] | None:
        return orders.get(order_id)

    @gateway.tool(name="orders.cancel")
    def cancel(order_id: str) -> str:
        return f"cancelled {order_id}"

    support = {"id": "alice", "roles": ["support"]}
    try:
        gateway.call("orders.cancel", {"order_id": "o1"}, principal=support, session="sess-a")
        with pytest.raises(ToolDenied):
            gateway.call("orders.cancel", {"order_id": "o2"}, principal=support, session="sess-b")
        export = tmp_path / "audit.jsonl"
        export.write_text("".join(line + "\n" for line in gateway.audit.export_jsonl()), encoding="utf-8")
    finally:
        gateway.close()
    allowed, denied = load_sessions(export)
    assert (allowed.id, denied.id) == ("sess-a", "sess-b")
    (call,) = allowed.tool_calls
    assert call.name == "orders.cancel" and call.arguments == {"order_id": "o1"} and call.decision == "allow"
    assert denied.tool_calls[0].decision == "deny"
    success = evaluate([allowed, denied], [create_evaluator("Builtin.GoalSuccessRate")], models=models)
    assert [r.passed for r in success] == [False, False], "no conversation text: no final answer to judge"
    assert "orders.cancel" in success[1].explanation


def test_truncated_audit_record_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"seq": 1, "kind": "decision", "call_id": "c", "tool": "t", "prev_hash": "0"}\n{"seq": 2}\n')
    with pytest.raises(TraceFormatError, match=r"audit\.jsonl:2: not a gateway audit record: missing call_id"):
        load_sessions(path)
