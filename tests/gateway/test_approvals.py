"""Approvals: persisted, only an approver role (never the requester) decides, execution happens exactly once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore import ApprovalRequired, Gateway, ToolDenied
from agentcore.cli import app
from agentcore.gateway import ApprovalError

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}
BIG_REFUND = {"order_id": "o1", "amount": 800}


def _pending(gw: Gateway) -> str:
    with pytest.raises(ApprovalRequired) as info:
        gw.call("refunds.issue", BIG_REFUND, principal=SUPPORT, session="s9")
    return info.value.approval_id


def test_approval_is_persisted_and_executes_exactly_once(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    approval_id = _pending(gw)
    stored = gw.approvals.get(approval_id)
    assert (stored.status, stored.tool, stored.args, stored.requester, stored.approver_roles) == (
        "pending", "refunds.issue", {"order_id": "o1", "amount": 800}, "alice", ["manager"],
    )  # fmt: skip
    with pytest.raises(ApprovalError, match="cannot decide its own"):
        gw.approvals.approve(approval_id, by={"id": "alice", "roles": ["manager", "support"]})
    with pytest.raises(ApprovalError, match="lacks the approver role"):
        gw.approvals.approve(approval_id, by={"id": "bob", "roles": ["support"]})
    assert runs == {}
    assert gw.approvals.approve(approval_id, by=MANAGER) == {"order_id": "o1", "refunded": 800.0}
    assert gw.approvals.execute(approval_id) == {"order_id": "o1", "refunded": 800.0}  # stored result, no rerun
    with pytest.raises(ApprovalError, match="not pending"):
        gw.approvals.approve(approval_id, by=MANAGER)
    assert runs == {"refunds.issue": 1}
    kinds = [(r["kind"], r["effect"], r["outcome"]) for r in map(_json, gw.audit.export_jsonl())]
    assert kinds == [
        ("decision", "needs_approval", "pending"),
        ("approval", "approved", None),
        ("decision", "allow", "started"),
        ("execution", None, "ok"),
    ]
    assert gw.approvals.get(approval_id).status == "executed"


def test_concurrent_executors_run_the_call_once(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    approval_id = _pending(gw)
    gw.approvals.approve(approval_id, by=MANAGER, execute=False)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(_try(gw, approval_id))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runs == {"refunds.issue": 1}
    assert sum(r == {"order_id": "o1", "refunded": 800.0} for r in results) >= 1


def _try(gw: Gateway, approval_id: str) -> object:
    try:
        return gw.approvals.execute(approval_id)
    except ApprovalError as error:
        return error


def test_rejection_and_expiry(make_gateway: Factory, tmp_path: Path) -> None:
    gw, runs = make_gateway()
    approval_id = _pending(gw)
    gw.approvals.reject(approval_id, by=MANAGER, note="customer already refunded")
    with pytest.raises(ToolDenied, match="already refunded"):
        gw.approvals.execute(approval_id)
    short, _ = make_gateway(approval_ttl_s=0.05, database=str(tmp_path / "short.db"))
    expiring = _pending(short)
    time.sleep(0.1)
    assert short.approvals.get(expiring).status == "expired"
    with pytest.raises(ApprovalError, match="expired"):
        short.approvals.approve(expiring, by=MANAGER)
    assert runs == {}


def test_a_deny_added_after_approval_still_wins(make_gateway: Factory, tmp_path: Path) -> None:
    gw, runs = make_gateway()
    approval_id = _pending(gw)
    policy = tmp_path / "policies" / "support.policy"
    policy.write_text(policy.read_text() + 'deny refunds.issue when order_id is "o1".\n')
    gw.policy.check_now()
    with pytest.raises(ToolDenied):
        gw.approvals.approve(approval_id, by=MANAGER)
    assert runs == {} and gw.approvals.get(approval_id).status == "failed"


def test_wait_mode_resumes_after_a_cli_approval(make_gateway: Factory) -> None:
    gw, runs = make_gateway(approval_mode="wait")
    database = gw.db.url.removeprefix("sqlite:///")

    def approve_from_cli() -> None:
        while not gw.approvals.list():
            time.sleep(0.02)
        pending = gw.approvals.list()[0]
        listed = CliRunner().invoke(app, ["gateway", "approvals", "list", "--database", database])
        assert pending.id in listed.output
        own = CliRunner().invoke(app, ["gateway", "approvals", "approve", pending.id, "-d", database, "--by", "alice",
                                       "--role", "manager"])  # fmt: skip
        assert own.exit_code == 1
        ok = CliRunner().invoke(app, ["gateway", "approvals", "approve", pending.id, "-d", database, "--by", "mona",
                                      "--role", "manager", "--note", "verified"])  # fmt: skip
        assert ok.exit_code == 0, ok.output

    approver = threading.Thread(target=approve_from_cli)
    approver.start()
    result = asyncio.run(gw.acall("refunds.issue", BIG_REFUND, principal=SUPPORT, approval_timeout_s=10))
    approver.join()
    assert result == {"order_id": "o1", "refunded": 800.0} and runs == {"refunds.issue": 1}


def test_wait_mode_times_out_and_cli_reject(make_gateway: Factory) -> None:
    gw, runs = make_gateway()
    with pytest.raises(ApprovalError, match="still pending"):
        asyncio.run(gw.acall("refunds.issue", BIG_REFUND, principal=SUPPORT, approval="wait", approval_timeout_s=0.1))
    pending = gw.approvals.list()[0]
    database = gw.db.url.removeprefix("sqlite:///")
    for by, role in (("\u200b", "manager"), ("mona", "manager\x1b[8m")):  # no one; a role that hides the output
        nobody = CliRunner().invoke(app, ["gateway", "approvals", "reject", pending.id, "-d", database, "--by", by,
                                          "--role", role])  # fmt: skip
        assert nobody.exit_code == 2 and ("empty in canonical form" in nobody.output or "U+001B" in nobody.output)
    assert gw.approvals.get(pending.id).status == "pending"
    rejected = CliRunner().invoke(app, ["gateway", "approvals", "reject", pending.id, "-d", database, "--by", "mona",
                                        "--role", "manager"])  # fmt: skip
    assert rejected.exit_code == 0 and gw.approvals.get(pending.id).status == "rejected"
    assert runs == {}


def test_cli_shows_hostile_arguments_and_approver_ids_escaped(
    make_gateway: Factory, hostile_text: tuple[str, ...], shown_safely: Callable[..., None]
) -> None:
    """An approver may be named ``x[/]``: `approvals approve` recorded the sign-off, then stopped with a
    MarkupError instead of confirming it. The arguments `approvals list` shows are the agent's."""
    gw, _ = make_gateway()
    for text in hostile_text:
        with pytest.raises(ApprovalRequired):
            gw.call("refunds.issue", {"order_id": text, "amount": 800}, principal=SUPPORT)
    database = ["-d", gw.db.url.removeprefix("sqlite:///")]
    listed = CliRunner().invoke(app, ["gateway", "approvals", "list", *database])
    assert listed.exit_code == 0 and len(listed.output.splitlines()) == len(hostile_text), listed.output
    shown_safely(listed.output, '"order_id":"x[/]"', '"order_id":"[bold red]boom"')
    as_json = CliRunner().invoke(app, ["gateway", "approvals", "list", "--json", *database])
    shown_safely(as_json.output)
    first = gw.approvals.list()[0].id
    by = ["--by", "x[/]", "--role", "manager"]
    approved = CliRunner().invoke(app, ["gateway", "approvals", "approve", first, *database, *by])
    assert approved.exit_code == 0 and f"{first} approved by x[/];" in approved.output, approved.output


def _json(line: str) -> dict[str, object]:
    import json

    return dict(json.loads(line))


def test_why_an_approved_call_failed_closed_is_for_developers_not_the_model(tmp_path: Path) -> None:
    """An approved call whose re-admission fails closed keeps the developer text out of what a model or an MCP
    client sees (``agent_message``, which the MCP proxy returns), also when the stored outcome is read later."""
    from tests.gateway.conftest import POLICY, build_support_gateway

    policy = POLICY + 'require approval from role "manager" for orders.cancel.\n'
    gw, runs = build_support_gateway(tmp_path, policy)
    try:
        with pytest.raises(ApprovalRequired) as pending:
            gw.call("orders.cancel", {"order_id": "o1"}, principal=SUPPORT)
        approval_id = pending.value.approval_id
        gw.approvals.approve(approval_id, by=MANAGER, execute=False)
        gw.context.resolvers.clear()  # the deny on order(order_id).status now fails closed on re-admission
        with pytest.raises(ToolDenied) as denied:
            gw.approvals.execute(approval_id)
        assert "@gateway.resolver" in str(denied.value) and "@gateway.resolver" not in denied.value.agent_message
        for again in (lambda: gw.approvals.execute(approval_id), lambda: gw.approvals.wait_sync(approval_id, 0)):
            with pytest.raises(ApprovalError) as settled:
                again()
            assert "@gateway.resolver" in str(settled.value)  # the developer keeps why
            shown = getattr(settled.value, "agent_message", str(settled.value))  # what the MCP proxy returns
            assert "@gateway.resolver" not in shown and "failed closed" in shown and approval_id in shown
        assert runs == {}
    finally:
        gw.close()
