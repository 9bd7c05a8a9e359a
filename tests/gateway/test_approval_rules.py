"""Approval semantics: every requirement met by its own approver, never the requester, never past the TTL, a rule
that names no approver rejected; a retried call finds its request instead of opening another."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentcore import ApprovalRequired, Gateway, ToolDenied
from agentcore.cli import app
from agentcore.gateway import ApprovalError
from agentcore.gateway.approvals import Approval
from agentcore.policies import parse
from agentcore.policies.checker import check

POLICY = """policy "wires"
allow wire.send for users with role "treasury".
require approval from role "supervisor" for wire.send when amount is more than 1000.
require approval from role "cfo" for wire.send when amount is more than 10000.
"""
TREASURER = {"id": "tess", "roles": ["treasury"]}
SUPERVISOR = {"id": "sam", "roles": ["supervisor"]}
CFO = {"id": "cleo", "roles": ["cfo"]}
BIG = {"to": "acme", "amount": 50000}


Wires = Callable[..., tuple[Gateway, list[dict[str, Any]]]]


@pytest.fixture
def wires(tmp_path: Path) -> Iterator[Wires]:
    """``wires(policy=POLICY, **Gateway options)`` -> (gateway with ``wire.send``, the wires it sent); closed after."""
    made: list[Gateway] = []

    def make(policy: str = POLICY, **options: Any) -> tuple[Gateway, list[dict[str, Any]]]:
        (tmp_path / "p").mkdir(exist_ok=True)
        (tmp_path / "p" / "wires.policy").write_text(policy)
        options.setdefault("database", str(tmp_path / "gw.db"))
        gw = Gateway(tmp_path / "p", **options)
        made.append(gw)
        sent: list[dict[str, Any]] = []

        @gw.tool(name="wire.send")
        def send(to: str, amount: int) -> str:
            sent.append({"to": to, "amount": amount})
            return f"sent {amount} to {to}"

        return gw, sent

    yield make
    for gw in made:
        gw.close()


def _request(gw: Gateway, args: dict[str, Any] = BIG) -> ApprovalRequired:
    with pytest.raises(ApprovalRequired) as info:
        gw.call("wire.send", args, principal=TREASURER)
    return info.value


def _records(gw: Gateway, kind: str) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, gw.audit.export_jsonl()) if r["kind"] == kind]


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_every_required_role_signs_off_each_by_another_principal(
    wires: Wires, tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    database = str(tmp_path / "gw.db") if store == "sqlite" else request.getfixturevalue("pg_url")
    gw, sent = wires(database=database)
    pending = _request(gw)
    assert gw.approvals.get(pending.approval_id).approver_roles == ["supervisor", "cfo"]
    partly = gw.approvals.approve(pending.approval_id, by=SUPERVISOR)
    assert isinstance(partly, Approval) and partly.status == "pending" and partly.missing_roles == ["cfo"]
    assert sent == []  # one supervisor alone does not approve a call that also needs the cfo
    with pytest.raises(ApprovalError, match="already approved"):
        gw.approvals.approve(pending.approval_id, by={"id": "sam", "roles": ["supervisor", "cfo"]})
    with pytest.raises(ApprovalError, match=r"lacks the approver role.*cfo"):
        gw.approvals.approve(pending.approval_id, by={"id": "sue", "roles": ["supervisor"]})
    with pytest.raises(ApprovalError, match="cannot decide its own"):
        gw.approvals.approve(pending.approval_id, by={"id": "tess", "roles": ["cfo"]})
    assert gw.approvals.approve(pending.approval_id, by=CFO) == "sent 50000 to acme"
    assert sent == [BIG]
    signoffs = [(r["detail"]["by"], r["detail"]["role"], r["outcome"]) for r in _records(gw, "approval")]
    assert signoffs == [("sam", "supervisor", "awaiting cfo"), ("cleo", "cfo", None)]
    (started,) = [r for r in _records(gw, "decision") if r["outcome"] == "started"]  # committed before it ran
    assert started["detail"]["approved_by"] == [{"by": "sam", "role": "supervisor"}, {"by": "cleo", "role": "cfo"}]


def test_one_holder_of_a_required_role_may_reject(wires: Wires) -> None:
    gw, sent = wires()
    pending = _request(gw)
    database = gw.db.url.removeprefix("sqlite:///")
    cli = ["gateway", "approvals", "approve", pending.approval_id, "-d", database, "--by", "sam", "--role"]
    signed = CliRunner().invoke(app, [*cli, "supervisor"])
    assert signed.exit_code == 0 and "still needs role cfo" in signed.output
    listed = CliRunner().invoke(app, ["gateway", "approvals", "list", "-d", database]).output
    assert "supervisor (by sam), cfo" in listed
    gw.approvals.reject(pending.approval_id, by=CFO, note="not budgeted")
    with pytest.raises(ToolDenied, match="rejected by cleo"):
        gw.approvals.execute(pending.approval_id)
    assert sent == [] and [r["effect"] for r in _records(gw, "approval")] == ["approved", "rejected"]
    assert gw.audit.verify().ok  # the CLI's record and the gateway's share one chain


def test_an_approval_past_its_ttl_never_executes(wires: Wires) -> None:
    gw, sent = wires(approval_ttl_s=0.3)
    pending = _request(gw, {"to": "acme", "amount": 5000})  # supervisor only
    gw.approvals.approve(pending.approval_id, by=SUPERVISOR, execute=False)
    time.sleep(0.4)
    with pytest.raises(ApprovalError, match="expired"):
        gw.approvals.execute(pending.approval_id)
    again = _request(gw, {"to": "acme", "amount": 5000})  # a retry now asks anew
    assert again.approval_id != pending.approval_id and sent == []
    assert gw.approvals.get(pending.approval_id).status == "expired"


def test_a_retried_call_finds_its_request_and_runs_once_approved(wires: Wires) -> None:
    gw, sent = wires()
    args = {"to": "acme", "amount": 5000}
    first = _request(gw, args)
    assert _request(gw, args).approval_id == first.approval_id  # still pending: no second request
    assert len(gw.approvals.list()) == 1
    with pytest.raises(ApprovalRequired) as other:
        gw.call("wire.send", args, principal={"id": "trent", "roles": ["treasury"]})
    assert other.value.approval_id != first.approval_id  # another caller's identical call is its own request
    gw.approvals.approve(first.approval_id, by=SUPERVISOR, execute=False)
    assert gw.call("wire.send", args, principal=TREASURER) == "sent 5000 to acme"  # the retry executes it
    assert sent == [args] and gw.approvals.get(first.approval_id).status == "executed"
    assert _request(gw, args).approval_id not in (first.approval_id, other.value.approval_id)  # consumed


def test_an_approval_rule_without_a_role_is_a_checker_error_and_denies(wires: Wires, tmp_path: Path) -> None:
    text = 'policy "w"\nallow wire.send.\nrequire approval for wire.send when amount is more than 1000.\n'
    (finding,) = [f for f in check([parse(text, "w.policy")]) if f.severity == "error"]
    assert (finding.code, finding.line) == ("approval-without-approver", 3) and "from role" in finding.help
    (tmp_path / "w.policy").write_text(text)
    result = CliRunner().invoke(app, ["policy", "check", str(tmp_path / "w.policy")])
    assert result.exit_code != 0 and "approval-without-approver" in result.output
    gw, sent = wires(text)
    with pytest.raises(ToolDenied, match="names no approver role"):
        gw.call("wire.send", BIG, principal=TREASURER)
    assert sent == [] and gw.approvals.list() == []
    (denied,) = _records(gw, "decision")
    assert (denied["effect"], denied["outcome"]) == ("deny", "denied")


def test_concurrent_approvers_sign_a_role_off_once(wires: Wires) -> None:
    gw, sent = wires()
    pending = _request(gw)
    outcomes: list[str] = []

    def approve(i: int) -> None:
        try:
            gw.approvals.approve(pending.approval_id, by={"id": f"sup{i}", "roles": ["supervisor"]}, execute=False)
            outcomes.append("signed")
        except ApprovalError:
            outcomes.append("refused")

    threads = [threading.Thread(target=approve, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["signed"]
    assert gw.approvals.get(pending.approval_id).missing_roles == ["cfo"] and sent == []


def test_a_cli_sign_off_joins_a_keyed_audit_chain(wires: Wires, tmp_path: Path) -> None:
    key_file = tmp_path / "audit.key"
    key_file.write_text("k1:" + "s" * 40 + "\n")
    gw, sent = wires(audit_key=key_file)
    pending = _request(gw, {"to": "acme", "amount": 5000})
    database = gw.db.url.removeprefix("sqlite:///")
    cli = ["gateway", "approvals", "approve", pending.approval_id, "-d", database, "--by", "sam", "--role"]
    signed = CliRunner().invoke(app, [*cli, "supervisor", "--key-file", str(key_file)])
    assert signed.exit_code == 0, signed.output
    assert gw.call("wire.send", {"to": "acme", "amount": 5000}, principal=TREASURER) == "sent 5000 to acme"
    assert gw.audit.verify().ok and [r["detail"]["by"] for r in _records(gw, "approval")] == ["sam"]
    assert len(sent) == 1


def test_concurrent_retries_of_an_approved_call_run_it_once(wires: Wires) -> None:
    """Eight ``acall`` retries at once (as MCP clients retry): one runs the call, the others never run it again."""
    gw, sent = wires()
    args = {"to": "acme", "amount": 5000}
    gw.approvals.approve(_request(gw, args).approval_id, by=SUPERVISOR, execute=False)

    async def retry() -> object:
        try:
            return await gw.acall("wire.send", args, principal=TREASURER, approval="raise")
        except (ApprovalError, ApprovalRequired) as error:
            return type(error).__name__

    async def main() -> list[object]:
        return list(await asyncio.gather(*(retry() for _ in range(8))))

    results = asyncio.run(main())
    assert sent == [args] and results.count("sent 5000 to acme") >= 1
