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
from agentcore.gateway.approvals import Approval, ApprovalStore
from agentcore.gateway.db import Database
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


def _request(
    gw: Gateway, args: dict[str, Any] = BIG, *, principal: dict[str, Any] = TREASURER, tenant: str | None = None
) -> ApprovalRequired:
    with pytest.raises(ApprovalRequired) as info:
        gw.call("wire.send", args, principal=principal, tenant=tenant)
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
    gw, sent = wires(approval_ttl_s=1.0)  # time enough to approve it on a busy machine
    pending = _request(gw, {"to": "acme", "amount": 5000})  # supervisor only
    gw.approvals.approve(pending.approval_id, by=SUPERVISOR, execute=False)
    time.sleep(1.1)
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


def test_a_retry_that_now_needs_another_role_is_a_new_request_not_the_approved_one(wires: Wires) -> None:
    """Approved with the supervisor's sign-off; the requester is then put on probation, which needs the cfo too.
    Her retry must not run on the old sign-offs (it ran: the request matched on ids alone), and the old request
    expires (else a later ``execute`` of it would run the call a second time)."""
    policy = POLICY + 'require approval from role "cfo" for wire.send for users with role "probation".\n'
    gw, sent = wires(policy)
    args = {"to": "acme", "amount": 5000}
    first = _request(gw, args)
    gw.approvals.approve(first.approval_id, by=SUPERVISOR, execute=False)
    on_probation = {"id": "tess", "roles": ["treasury", "probation"]}
    again = _request(gw, args, principal=on_probation)
    assert again.approval_id != first.approval_id and sent == []
    assert gw.approvals.get(again.approval_id).approver_roles == ["supervisor", "cfo"]
    with pytest.raises(ApprovalError, match="is expired"):
        gw.approvals.execute(first.approval_id)
    gw.approvals.approve(again.approval_id, by=SUPERVISOR, execute=False)
    gw.approvals.approve(again.approval_id, by=CFO, execute=False)
    assert gw.call("wire.send", args, principal=on_probation) == "sent 5000 to acme"
    assert sent == [args]


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


def test_a_request_expired_by_another_writer_mid_decision_records_no_approval(
    wires: Wires, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a decision holds the audit's lock and an expiry (``get`` past the TTL, any process) takes the
    approvals' lock: the expiry can commit between the decision's read and its update. The update then matched
    nothing, yet the sign-off and an ``approved`` audit record committed for an expired request."""
    gw, sent = wires(database=pg_url)
    pending = _request(gw, {"to": "acme", "amount": 5000})
    other = Database(pg_url)
    store, load, reads = gw.approvals.store, gw.approvals.store._load, []

    def expiring_load(cur: Any, approval_id: str) -> Approval:
        found = load(cur, approval_id)
        reads.append(approval_id)
        if len(reads) == 2:  # decide_in's read, in the audit's transaction: another process expires it now
            assert ApprovalStore(other)._transition(approval_id, "pending", "expired")
        return found

    monkeypatch.setattr(store, "_load", expiring_load)
    with pytest.raises(ApprovalError, match="decided meanwhile or expired"):
        gw.approvals.approve(pending.approval_id, by=SUPERVISOR)
    monkeypatch.undo()
    other.close()
    expired = gw.approvals.get(pending.approval_id)
    assert (expired.status, expired.signoffs, sent) == ("expired", [], [])
    assert _records(gw, "approval") == []


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


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_only_an_approver_of_the_requesters_tenant_decides(
    wires: Wires, tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    database = str(tmp_path / "gw.db") if store == "sqlite" else request.getfixturevalue("pg_url")
    gw, sent = wires(database=database)
    aid = _request(gw, tenant="acme").approval_id
    gw.approvals.approve(aid, by=SUPERVISOR, tenant="acme")
    for decide in (gw.approvals.approve, gw.approvals.reject):
        with pytest.raises(ApprovalError, match="not a request of tenant 'globex'") as refused:
            decide(aid, by=CFO, tenant="globex")
        assert "acme" not in str(refused.value)  # nothing of the other tenant's request is shown
        with pytest.raises(ApprovalError, match=r"requested in a tenant.*pass the approver's tenant"):
            decide(aid, by=CFO)  # an approver without a tenant, as every approver was before
    stored = gw.approvals.get(aid)
    assert (stored.status, stored.missing_roles, sent) == ("pending", ["cfo"], [])
    assert [(r["detail"]["by"], r["tenant"]) for r in _records(gw, "approval")] == [("sam", "acme")]  # refusals aren't
    assert [a.id for a in gw.approvals.list(tenant="acme")] == [aid] == [a.id for a in gw.approvals.list()]
    assert gw.approvals.list(tenant="globex") == [] and gw.approvals.list(tenant=None) == []
    with pytest.raises(ApprovalError, match="no approval request"):
        gw.approvals.get(aid, tenant="globex")
    assert gw.approvals.approve(aid, by=CFO, tenant="acme") == "sent 50000 to acme" and sent == [BIG]
    records = _records(gw, "approval")
    assert [(r["detail"]["by"], r["tenant"], r["outcome"]) for r in records] == [
        ("sam", "acme", "awaiting cfo"), ("cleo", "acme", None),
    ]  # fmt: skip


def test_the_same_id_in_two_tenants_is_two_principals(wires: Wires) -> None:
    """Ids are unique within a tenant only: acme's bob is the requester, globex's bob is of another tenant; neither
    decides. A request made without a tenant is decided by an approver without one, as before."""
    gw, sent = wires()
    bob = {"id": "bob", "roles": ["treasury", "supervisor", "cfo"]}
    aid = _request(gw, principal=bob, tenant="acme").approval_id
    with pytest.raises(ApprovalError, match="'bob' requested this call and cannot decide its own"):
        gw.approvals.approve(aid, by=bob, tenant="acme")
    with pytest.raises(ApprovalError, match="not a request of tenant 'globex'"):
        gw.approvals.approve(aid, by=bob, tenant="globex")
    untenanted = _request(gw).approval_id
    with pytest.raises(ApprovalError, match="requested without a tenant: only an approver without one"):
        gw.approvals.approve(untenanted, by=SUPERVISOR, tenant="acme")
    assert sent == [] and _records(gw, "approval") == []
    assert {a.id: a.status for a in gw.approvals.list(tenant=None)} == {untenanted: "pending"}
    gw.approvals.approve(untenanted, by=SUPERVISOR)
    assert gw.approvals.approve(untenanted, by=CFO) == "sent 50000 to acme"
    assert gw.approvals.reject(aid, by=CFO, tenant="acme").status == "rejected"  # another of acme's approvers may


def test_the_cli_decides_and_lists_as_an_approver_of_a_tenant(wires: Wires) -> None:
    gw, sent = wires()
    aid = _request(gw, tenant="acme").approval_id
    database = gw.db.url.removeprefix("sqlite:///")
    approve = ["gateway", "approvals", "approve", aid, "-d", database, "--by", "sam", "--role", "supervisor"]
    for extra, reason in (([], "requested in a tenant"), (["--tenant", "globex"], "not a request of tenant 'globex'")):
        refused = CliRunner().invoke(app, [*approve, *extra])
        assert refused.exit_code == 1 and reason in refused.output, refused.output
    listing = ["gateway", "approvals", "list", "-d", database]
    assert "no pending approval requests" in CliRunner().invoke(app, [*listing, "--tenant", "globex"]).output
    assert f"{aid}  pending  wire.send  requested by tess (tenant acme)" in CliRunner().invoke(app, listing).output
    signed = CliRunner().invoke(app, [*approve, "--tenant", "acme"])
    assert signed.exit_code == 0 and "still needs role cfo" in signed.output, signed.output
    rejected = CliRunner().invoke(app, ["gateway", "approvals", "reject", aid, "-d", database, "--by", "cleo",
                                        "--role", "cfo", "--tenant", "acme"])  # fmt: skip
    assert rejected.exit_code == 0 and "rejected by cleo" in rejected.output, rejected.output
    assert sent == [] and [(r["effect"], r["tenant"]) for r in _records(gw, "approval")] == [
        ("approved", "acme"), ("rejected", "acme"),
    ]  # fmt: skip


def test_the_approvers_tenant_is_compared_in_the_canonical_form_requests_store(wires: Wires) -> None:
    """A request's tenant is stored canonical (NFKC, invisible characters removed), and so is the approver's
    compared (as their id is): the spelling the caller used names the same tenant for its approvers."""
    gw, sent = wires()
    aid = _request(gw, tenant="ａｃｍｅ").approval_id  # fullwidth: the tenant acme
    assert gw.approvals.get(aid).tenant == "acme" and [a.id for a in gw.approvals.list(tenant="ａｃｍｅ")] == [aid]
    with pytest.raises(ApprovalError, match="not a request of tenant 'acme-eu'"):
        gw.approvals.approve(aid, by=SUPERVISOR, tenant="acme-eu")
    gw.approvals.approve(aid, by=SUPERVISOR, tenant="ａｃｍｅ")
    assert gw.approvals.approve(aid, by=CFO, tenant="acme\u200b") == "sent 50000 to acme" and sent == [BIG]
