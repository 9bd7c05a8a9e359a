"""The demo's tools and policies on τ-bench's own database and tasks (../shared/data, tests only).

Replaying the ground-truth calls of every test task: legitimate calls are allowed (or, for refunds over $1,000,
approved by a supervisor); the few calls the gateway denies are checked against τ-bench's raw JSON, independently
of the SQL store and the policy engine. Then each task's writes are mutated into violations, which must be denied.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentcore.demo.database import RetailDatabase, load_json_store
from agentcore.demo.governance import APPROVER, build_gateway, customer
from agentcore.demo.session import AgentSession, ToolOutcome

ORDER_WRITES = (
    "cancel_pending_order",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_pending_order_items",
    "return_delivered_order_items",
    "exchange_delivered_order_items",
)


@pytest.fixture(scope="module")
def tau(shared_data) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    folder = shared_data("tau_bench_retail", "db")
    db = RetailDatabase()
    db.load(load_json_store(folder))
    raw = {name: json.loads((folder / f"{name}.json").read_text()) for name in ("users", "orders")}
    tasks_file = shared_data("tau_bench_retail", "tasks_test.jsonl")
    tasks = [json.loads(line) for line in tasks_file.read_text().splitlines() if line.strip()]
    return {"db": db, "raw": raw, "tasks": tasks}


def _session(tau: dict[str, Any], task: dict[str, Any], tmp: Path) -> AgentSession:
    """A fresh store and gateway database: no history, no rate-limit state from another replay."""
    db = tau["db"].copy()
    number = len(list(tmp.glob("*.db")))
    gateway = build_gateway(db, database=str(tmp / f"{number}.db"))
    return AgentSession(f"{task['task_id']}-{number}", gateway, tenant="tau-bench")


def _authenticated(tau: dict[str, Any], task: dict[str, Any], tmp: Path) -> AgentSession:
    session = _session(tau, task, tmp)
    email = tau["raw"]["users"][task["user_id"]]["email"]
    assert session.call("find_user_id_by_email", {"email": email}).status == "ok"
    return session


def _justified(rule: str, call: dict[str, Any], task: dict[str, Any], raw: dict[str, Any]) -> bool:
    """Whether τ-bench's raw JSON (state at the start of the task) shows the call breaks ``rule``."""
    order = raw["orders"].get(call["arguments"].get("order_id", ""))
    if rule == "other-orders":
        return order is None or order["user_id"] != task["user_id"]
    if rule == "delivered-orders-only":
        return order is not None and order["status"] != "delivered"
    if rule == "pending-orders-only":
        return order is not None and order["status"] != "pending"
    if rule == "refund-to-original-or-gift-card":
        method = call["arguments"]["payment_method_id"]
        paid = order["payment_history"][0]["payment_method_id"] if order is not None else method
        return method != paid and "gift_card" not in method
    return False


def test_ground_truth_calls_are_allowed_and_denials_are_real_violations(tau: dict[str, Any], tmp_path: Path) -> None:
    statuses: Counter[str] = Counter()
    for task in tau["tasks"]:
        actions = task["actions"]
        session = _session(tau, task, tmp_path) if actions and actions[0]["name"].startswith("find_user") else (
            _authenticated(tau, task, tmp_path))  # fmt: skip
        for call in actions:
            outcome = session.call(call["name"], call["arguments"])
            statuses[outcome.status] += 1
            if outcome.status == "needs_approval":
                order = tau["raw"]["orders"][call["arguments"]["order_id"]]
                assert sum(item["price"] for item in order["items"]) > 1000, (task["task_id"], call)
                assert outcome.rules == ["high-value-refund"]
                statuses[session.approve(outcome, APPROVER, "test supervisor").status] += 1
            if outcome.status == "denied":
                assert _justified(outcome.rules[0], call, task, tau["raw"]), (task["task_id"], call, outcome.rules)
        session.gateway.close()
    calls = sum(statuses.values()) - statuses["approved"]
    assert statuses["denied"] <= 0.02 * calls and statuses["ok"] + statuses["needs_approval"] >= 0.95 * calls
    assert statuses["needs_approval"] == statuses["approved"] > 10


def _mutations(task: dict[str, Any], raw: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Violations derived from the task's ground-truth writes, each with the rule that must deny it."""
    user = raw["users"][task["user_id"]]
    stranger = next(o for o in raw["orders"].values() if o["user_id"] != task["user_id"] and o["status"] == "pending")
    delivered = [oid for oid in user["orders"] if raw["orders"][oid]["status"] == "delivered"]
    cases = []
    writes = [call for call in task["actions"] if call["name"] in ORDER_WRITES]
    if writes:
        first = writes[0]
        cases.append(({**first, "arguments": {**first["arguments"], "order_id": stranger["order_id"]}}, "other-orders"))
    for call in writes:
        if "pending" in call["name"] and delivered:
            mutated = {**call, "arguments": {**call["arguments"], "order_id": delivered[0]}}
            cases.append((mutated, "pending-orders-only"))
        if call["name"] == "return_delivered_order_items":
            order = raw["orders"][call["arguments"]["order_id"]]
            paid = order["payment_history"][0]["payment_method_id"]
            other = [m for m in user["payment_methods"] if m != paid and not m.startswith("gift_card")]
            if other:
                mutated = {**call, "arguments": {**call["arguments"], "payment_method_id": other[0]}}
                cases.append((mutated, "refund-to-original-or-gift-card"))
    return cases


def test_mutated_violations_are_denied(tau: dict[str, Any], tmp_path: Path) -> None:
    checked: Counter[str] = Counter()
    for task in tau["tasks"][:24]:
        for call, rule in _mutations(task, tau["raw"]):
            session = _authenticated(tau, task, tmp_path)
            outcome: ToolOutcome = session.call(call["name"], call["arguments"])
            assert outcome.status == "denied" and rule in outcome.rules, (task["task_id"], call, outcome)
            checked[rule] += 1
            session.gateway.close()
        unauthenticated = _session(tau, task, tmp_path)
        unauthenticated.principal = customer(task["user_id"], "a claim, never checked in this conversation")
        writes = [c for c in task["actions"] if c["name"] in ORDER_WRITES]
        if writes:
            outcome = unauthenticated.call(writes[0]["name"], writes[0]["arguments"])
            assert outcome.status == "denied" and "authenticate-first" in outcome.rules
            checked["authenticate-first"] += 1
        unauthenticated.gateway.close()
    assert min(checked.values()) >= 3 and len(checked) == 4, checked
