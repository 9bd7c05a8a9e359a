"""forget(user) erases a person from memory and the gateway: no byte of them left in the database files, the audit
chain still verifies, and the export shows their records as erased."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentcore import ApprovalRequired, Gateway, MemoryStore, ToolDenied, forget
from agentcore.cli import app
from agentcore.gateway.anchors import JsonlAnchorSink
from agentcore.gateway.audit import AuditEvent, AuditLog, Joined
from agentcore.gateway.audit_keys import ChainKeys
from agentcore.gateway.db import Database
from agentcore.gateway.erasure import ForgetReport
from agentcore.gateway.errors import ApprovalError, ErasureIncomplete
from agentcore.gateway.identity import ANY_TENANT, TenantFilter
from agentcore.gateway.sealing import Sealer, subject_ref
from agentcore.gateway.state import _cached_record
from agentcore.policies.context import Scope
from tests.gateway.test_integrity import _gateway

POLICY = 'policy "p"\nallow notes.add.\nlimit notes.add to 100 calls per minute per user.\n'
SECRET_TEXT = "alice-secret-plan-7d3f"  # appears in alice's memory, call arguments and results
OTHER_TEXT = "bob-plain-note-91ab"


def _database_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.glob("agentcore.db*"))


def _use_everything(policies: Path, database: str | None = None) -> None:
    with MemoryStore(database) as store:
        store.add_event("alice", "s1", "user", f"remember {SECRET_TEXT}")
        store.add_event("bob", "s1", "user", f"remember {OTHER_TEXT}")
    gw = Gateway(policies, database=database)
    gw.tool(lambda text: f"stored {text}", name="notes.add", schema={"type": "object"})
    gw.call(
        "notes.add", {"text": SECRET_TEXT}, principal={"id": "alice", "attributes": {"email": "alice@corp.example"}}
    )
    gw.call("notes.add", {"text": OTHER_TEXT}, principal="bob")
    gw.close()


def test_forget_with_the_documented_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The finding: MemoryStore() and Gateway() share .agentcore/agentcore.db, and after forget("alice") the raw
    file still held alice's id and text in an audit row."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.policy").write_text(POLICY)
    _use_everything(tmp_path / "p.policy")
    folder = tmp_path / ".agentcore"
    assert SECRET_TEXT.encode() in _database_bytes(folder)  # memory rows hold it until forget

    report = forget("alice")
    assert report.memory.events == 1 and report.gateway.subject_keys >= 1 and report.gateway.calls == 1

    raw = _database_bytes(folder)
    for needle in (SECRET_TEXT, "alice@corp.example", "alice"):
        assert needle.encode() not in raw, needle
    assert OTHER_TEXT.encode() in raw  # the scan sees plaintext where there is some: bob's memory
    log = AuditLog(Database(None))
    assert log.verify().ok
    rows = [json.loads(line) for line in log.export_jsonl()]
    erased = [r for r in rows if r["erased"]]
    kept = [r for r in rows if not r["erased"]]
    assert len(erased) == 2  # the allow decision, committed before the tool ran, and its outcome
    assert all(r["principal"] is None and r["detail"] == {"erased": True} for r in erased)
    assert [(r["tool"], r["effect"], r["outcome"]) for r in erased] == [  # what happened stays auditable
        ("notes.add", "allow", "started"), ("notes.add", None, "ok"),
    ]  # fmt: skip
    assert kept[0]["principal"] == "bob" and kept[0]["detail"]["args"] == {"text": OTHER_TEXT}
    log.db.close()
    with MemoryStore() as store:
        assert store.list_events("alice", "s1") == [] and len(store.list_events("bob", "s1")) == 1


def test_forget_cli_covers_memory_and_gateway(tmp_path: Path) -> None:
    (tmp_path / "p.policy").write_text(POLICY)
    database = f"sqlite:///{tmp_path / 'shared' / 'agentcore.db'}"
    _use_everything(tmp_path / "p.policy", database)
    result = CliRunner().invoke(app, ["forget", "alice", "--yes", "--database", database])
    assert result.exit_code == 0, result.output
    assert "1 events" in result.output and "1 history rows" in result.output
    assert SECRET_TEXT.encode() not in _database_bytes(tmp_path / "shared")
    verify = CliRunner().invoke(app, ["gateway", "audit", "verify", "-d", database])
    assert verify.exit_code == 0, verify.output


WRITER = textwrap.dedent(
    """
    import sys
    from agentcore.gateway.audit import AuditEvent, AuditLog
    from agentcore.gateway.anchors import JsonlAnchorSink
    from agentcore.gateway.audit_keys import ChainKeys
    from agentcore.gateway.db import Database
    keys, sink = ChainKeys.parse(sys.argv[2], "test"), JsonlAnchorSink(sys.argv[3])
    log = AuditLog(Database(sys.argv[1]), keys=keys, anchors=sink)
    for i in range(30):
        who = "alice" if i % 3 == 0 else "bob"
        log.append(AuditEvent(kind="decision", call_id=str(i), tool="t.x", principal=who, detail={"text": who + "!"}))
    log.close()
    """
)


def test_erasure_on_postgres_with_several_writer_processes(pg_url: str, tmp_path: Path) -> None:
    key = "k1:" + "z" * 40
    anchors = str(tmp_path / "anchors.jsonl")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg_url, key, anchors]) for _ in range(3)]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0]
    gw = Gateway(None, database=pg_url, audit_key=ChainKeys.parse(key, "test"), anchors=anchors)
    assert gw.audit.verify().ok and gw.audit.verify().records == 90
    report = gw.forget("alice")
    assert report.subject_keys >= 1
    rows = list(gw.audit.rows())
    assert sum(r["erased"] for r in rows) == 30 and {r["principal"] for r in rows if not r["erased"]} == {"bob"}
    gw.close()
    log = AuditLog(Database(pg_url), keys=ChainKeys.parse(key, "test"))
    result = log.verify(JsonlAnchorSink(anchors))  # each writer anchored its last record at close
    assert result.ok and result.records == 90 and result.anchored_seq is not None
    log.db.close()


def test_forget_leaves_no_history_record_in_memory(tmp_path: Path) -> None:
    (tmp_path / "p.policy").write_text(
        'policy "p"\nallow refund.\n'
        "deny refund when sum of amount over refund in the last 24 hours per user plus amount exceeds 2000.\n"
    )
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"))
    gw.tool(lambda amount: amount, name="refund", schema={"type": "object"})
    for _ in range(3):
        gw.call("refund", {"amount": 600}, principal="ann")
    cached = gw.store.calls(Scope.USER, "ann", 0, tenant=None)  # the records stateful rules read: built once per row
    assert len(cached) == 3 and all(
        r is s for r, s in zip(cached, gw.store.calls(Scope.USER, "ann", 0, tenant=None), strict=True)
    )
    gw.forget("ann")
    assert gw.store.calls(Scope.USER, "ann", 0, tenant=None) == []
    assert _cached_record.cache_info().currsize == 0  # built once per row for speed; erasure drops every copy
    gw.close()


@pytest.mark.parametrize("spelling", ["sam", "s\u200bam", "\uff53am"])  # zero-width, fullwidth: sam all the same
def test_forget_an_approver_withdraws_their_pending_signoffs_and_unnames_the_rest(
    tmp_path: Path, spelling: str
) -> None:
    """A sign-off holds the approver's id and note: forgetting them leaves neither, and a request still pending
    needs that role again (under a blanked name one person could meet two roles). The id is read canonical, as
    the gateway stores it: another spelling of sam left his sign-off counting."""
    (tmp_path / "wires.policy").write_text(
        'policy "wires"\nallow wire.send.\nrequire approval from role "supervisor" for wire.send when amount > 1000.\n'
        'require approval from role "cfo" for wire.send when amount > 10000.\n'
    )
    database = tmp_path / "gw.db"
    gw = Gateway(tmp_path / "wires.policy", database=str(database))
    gw.tool(lambda to, amount: f"sent {amount}", name="wire.send", schema={"type": "object"})
    sam = {"id": "sam", "roles": ["supervisor", "cfo"]}
    big, small = ({"to": "x", "amount": amount} for amount in (50000, 5000))
    ids = []
    for args in (big, small):
        with pytest.raises(ApprovalRequired) as info:
            gw.call("wire.send", args, principal="tess")
        ids.append(info.value.approval_id)
    pending, settled = ids
    gw.approvals.approve(pending, by=sam, note="sam-note-pending", execute=False)
    assert gw.approvals.approve(settled, by=sam, note="sam-note-settled") == "sent 5000"
    report = gw.forget(spelling)
    assert report.signoffs == 2
    assert gw.approvals.get(pending).signoffs == [] and len(gw.approvals.get(pending).missing_roles) == 2
    (signoff,) = gw.approvals.get(settled).signoffs
    assert signoff.by == "(erased)" and signoff.note is None
    gw.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("gw.db*"))
    assert b"sam-note" not in raw


# ---- erasure names an id in a tenant -----------------------------------------------------------------------------
WIRES = (
    'policy "wires"\nallow wire.send.\nlimit wire.send to 100 calls per minute per user.\n'
    'require approval from role "supervisor" for wire.send when amount > 1000.\n'
    'require approval from role "cfo" for wire.send when amount > 10000.\n'
)
TENANTS = ("acme", "globex", None)
MEMORY_TENANTS = ("acme", "globex", "default")
APPROVER = {"id": "bob", "roles": ["supervisor", "cfo"]}


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "gw.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


def _memo(tenant: str | None) -> str:
    return f"bob-of-{tenant}-secret"


def _note(tenant: str | None) -> str:
    return f"signed-off-in-{tenant}"


def _bobs(tmp_path: Path, database: str) -> tuple[Gateway, dict[str | None, dict[str, str]]]:
    """Three people called bob: acme's, globex's and one without a tenant. Each makes a call (a history row),
    requests an approval, and signs off two of tess's requests in his tenant (one stays pending, one is settled)."""
    (tmp_path / "wires.policy").write_text(WIRES)
    gw = Gateway(tmp_path / "wires.policy", database=database)
    gw.tool(lambda to, amount, memo="": f"sent {amount}", name="wire.send", schema={"type": "object"})
    ids: dict[str | None, dict[str, str]] = {}
    for tenant in TENANTS:
        gw.call("wire.send", {"to": "x", "amount": 10, "memo": _memo(tenant)}, principal="bob", tenant=tenant)
        made = {}
        for name, who, amount in (("own", "bob", 5000), ("pending", "tess", 50000), ("settled", "tess", 5000)):
            args = {"to": "x", "amount": amount, "memo": _memo(tenant) if who == "bob" else f"tess-of-{tenant}"}
            with pytest.raises(ApprovalRequired) as info:
                gw.call("wire.send", args, principal=who, tenant=tenant)
            made[name] = info.value.approval_id
        gw.approvals.approve(made["pending"], by=APPROVER, tenant=tenant, note=_note(tenant), execute=False)
        assert gw.approvals.approve(made["settled"], by=APPROVER, tenant=tenant, note=_note(tenant)) == ("sent 5000")
        ids[tenant] = made
    return gw, ids


def _check_erased(gw: Gateway, ids: dict[str | None, dict[str, str]], erased: set[str | None]) -> None:
    """bob is gone from the tenants in ``erased`` (audit unreadable, no history, request deleted, sign-offs
    withdrawn or unnamed) and every other tenant's bob is whole."""
    rows = [json.loads(line) for line in gw.audit.export_jsonl()]
    for tenant in TENANTS:
        mine = [r for r in rows if r["tenant"] == tenant]
        history = gw.store.calls(Scope.USER, "bob", 0, tenant=tenant)
        own, pending, settled = (ids[tenant][k] for k in ("own", "pending", "settled"))
        if tenant in erased:
            assert sum(r["erased"] for r in mine) == 3  # his call (allow, outcome) and his request
            assert all(r["principal"] != "bob" and _memo(tenant) not in json.dumps(r) for r in mine if not r["erased"])
            assert history == []
            with pytest.raises(ApprovalError):
                gw.approvals.get(own)
            assert gw.approvals.get(pending).signoffs == []
            assert [(s.by, s.note) for s in gw.approvals.get(settled).signoffs] == [("(erased)", None)]
        else:
            assert not any(r["erased"] for r in mine), tenant
            bob = [r for r in mine if r["principal"] == "bob"]
            assert len(bob) == 3 and sum(_memo(tenant) in json.dumps(r["detail"]) for r in bob) == 2
            assert len(history) == 1
            assert gw.approvals.get(own).requester == "bob"
            for approval in (pending, settled):
                assert [(s.by, s.note) for s in gw.approvals.get(approval).signoffs] == [
                    ("bob", _note(tenant))
                ]  # fmt: skip
    assert gw.audit.verify().ok


@pytest.mark.parametrize(
    ("spelling", "tenant"),
    [("acme", "acme"), ("\uff41\uff43\uff4d\uff45", "acme"), ("ac\u200bme", "acme"), ("globex", "globex")],
)
def test_forgetting_one_tenants_bob_leaves_the_other_bobs(
    tmp_path: Path, database: str, spelling: str, tenant: str
) -> None:
    """Ids are unique within a tenant only: forget("bob") once erased acme's bob and globex's bob (two people)
    together, and both shared one sealing key, so erasing one shredded the other's audit evidence."""
    gw, ids = _bobs(tmp_path, database)
    report = gw.forget("bob", tenant=spelling)  # fullwidth or zero-width: acme as calls store it
    assert report == ForgetReport(subject_keys=1, calls=1, approvals=1, signoffs=2)
    _check_erased(gw, ids, {tenant})
    gw.close()


def test_forget_without_a_tenant_erases_bob_everywhere(tmp_path: Path, database: str) -> None:
    gw, ids = _bobs(tmp_path, database)
    assert gw.forget("bob") == ForgetReport(subject_keys=3, calls=3, approvals=3, signoffs=6)
    _check_erased(gw, ids, set(TENANTS))
    gw.close()


def test_forget_tenant_none_erases_only_the_bob_without_a_tenant(tmp_path: Path, database: str) -> None:
    gw, ids = _bobs(tmp_path, database)
    assert gw.forget("bob", tenant=None) == ForgetReport(subject_keys=1, calls=1, approvals=1, signoffs=2)
    _check_erased(gw, ids, {None})
    gw.close()


def test_forget_refuses_a_tenant_that_is_no_tenant_id(tmp_path: Path) -> None:
    gw, ids = _bobs(tmp_path, str(tmp_path / "gw.db"))
    with pytest.raises(TypeError, match="tenant must be a tenant id"):
        gw.forget("bob", tenant=42)  # type: ignore[arg-type]
    _check_erased(gw, ids, set())
    gw.close()


@pytest.mark.parametrize(
    ("tenant", "erased"),
    [
        ("acme", {"acme"}),
        ("\uff41\uff43\uff4d\uff45", {"acme"}),
        (None, {"default"}),
        (ANY_TENANT, set(MEMORY_TENANTS)),
    ],
    ids=["acme", "fullwidth-acme", "no-tenant", "every-tenant"],
)
def test_forget_erases_the_memory_of_the_id_in_its_tenant_only(
    tmp_path: Path, tenant: TenantFilter, erased: set[str]
) -> None:
    """Memory had no tenants: forget("bob", tenant="acme") erased globex's bob's memory too (another person)."""
    database = f"sqlite:///{tmp_path / 'agentcore.db'}"
    for name in MEMORY_TENANTS:
        with MemoryStore(database, tenant=name) as store:
            store.add_event("bob", "s1", "user", f"bob of {name}")
    report = forget("bob", database=database, tenant=tenant)
    assert report.memory.events == len(erased)
    for name in MEMORY_TENANTS:
        with MemoryStore(database, tenant=name) as store:
            kept = [event.text for event in store.list_events("bob", "s1")]
        assert kept == ([] if name in erased else [f"bob of {name}"]), name


def _texts(gw: Gateway) -> set[str]:
    """The notes whose records can still be read."""
    return {
        json.loads(r["detail"])["args"]["text"] for r in gw.audit.rows() if r["kind"] == "decision" and not r["erased"]
    }


def _sealed_without_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seal as gateways did before keys were per tenant: under the principal's key whatever the tenant."""
    seal = Sealer.seal
    monkeypatch.setattr(Sealer, "seal", lambda self, *fields, tenant: seal(self, *fields, tenant=None))


def test_a_tenanted_record_sealed_before_keys_were_per_tenant_is_erased_too(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """acme's bob's records written by an earlier gateway are under bob's key without a tenant: forgetting acme's
    bob must make them unreadable too, so that key goes (with every record under it, whoever's bob they were)."""
    (tmp_path / "p.policy").write_text('policy "p"\nallow notes.add.\n')
    gw = Gateway(tmp_path / "p.policy", database=database)
    gw.tool(lambda text: text, name="notes.add", schema={"type": "object"})
    with monkeypatch.context() as old:
        _sealed_without_tenant(old)
        for tenant in TENANTS:
            gw.call("notes.add", {"text": f"old-{tenant}"}, principal="bob", tenant=tenant)
        gw.call("notes.add", {"text": "old-ann-globex"}, principal="ann", tenant="globex")
    gw.audit.sealer = Sealer(gw.db)  # a gateway of this version, keys read from the database
    for tenant in TENANTS:
        gw.call("notes.add", {"text": f"new-{tenant}"}, principal="bob", tenant=tenant)
    with gw.db.read() as cur:  # bob's old key serves his calls without a tenant still; acme's, globex's are new
        cur.execute("SELECT subject FROM gateway_audit_subjects")
        refs = sorted(ref for (ref,) in cur.fetchall())
    assert refs == sorted(
        [subject_ref("ann"), subject_ref("bob"), subject_ref("bob", "acme"), subject_ref("bob", "globex")]
    )

    with caplog.at_level(logging.WARNING, logger="agentcore.gateway.erasure"):
        report = gw.forget("bob", tenant="acme")
    assert report.subject_keys == 2 and report.legacy_keys == 1  # acme's key, and the one that sealed acme's
    assert "'acme', 'globex'" in caplog.text and "unreadable in every tenant" in caplog.text
    assert _texts(gw) == {"old-ann-globex", "new-globex"}  # bob's old records went with the key, globex's new stay
    assert gw.audit.verify().ok
    gw.close()


def test_a_key_without_a_tenant_that_sealed_only_other_tenants_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "p.policy").write_text('policy "p"\nallow notes.add.\n')
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"))
    gw.tool(lambda text: text, name="notes.add", schema={"type": "object"})
    with monkeypatch.context() as old:
        _sealed_without_tenant(old)
        gw.call("notes.add", {"text": "old-globex"}, principal="bob", tenant="globex")
    gw.audit.sealer = Sealer(gw.db)
    gw.call("notes.add", {"text": "new-acme"}, principal="bob", tenant="acme")
    report = gw.forget("bob", tenant="acme")
    assert (report.subject_keys, report.legacy_keys) == (1, 0)
    assert _texts(gw) == {"old-globex"}
    assert gw.forget("bob", tenant=None).legacy_keys == 1  # bob's key without a tenant sealed globex's bob
    assert all(r["erased"] for r in gw.audit.rows())
    gw.close()


def test_forget_cli_names_the_tenant(tmp_path: Path) -> None:
    database = str(tmp_path / "gw.db")
    gw, ids = _bobs(tmp_path, database)
    gw.close()
    for tenant in ("acme", "default"):  # memory keeps the id in a tenant too
        with MemoryStore(f"sqlite:///{database}", tenant=tenant) as store:
            store.add_event("bob", "s1", "user", "hello")
    cli = CliRunner()
    asked = cli.invoke(app, ["forget", "bob", "--tenant", "\uff41cme", "-d", database], input="n\n")
    assert asked.exit_code == 1 and "Erase every trace of 'bob' in tenant 'acme' from memory and" in asked.output
    both = cli.invoke(app, ["forget", "bob", "--tenant", "acme", "--no-tenant", "--yes", "-d", database])
    assert both.exit_code == 2 and "not both" in both.output
    result = cli.invoke(app, ["forget", "bob", "--tenant", "acme", "--yes", "-d", database])
    assert result.exit_code == 0, result.output
    assert "forgot 'bob' in tenant 'acme': memory 1 events" in result.output
    assert "1 audit keys destroyed, 1 history rows, 1 approval requests" in result.output
    gw = Gateway(tmp_path / "wires.policy", database=database)
    _check_erased(gw, ids, {"acme"})
    gw.close()
    result = cli.invoke(app, ["forget", "bob", "--no-tenant", "--yes", "-d", database])
    assert result.exit_code == 0 and "forgot 'bob' without a tenant: memory 1 events" in result.output


def test_a_refused_call_that_spelled_bob_and_acme_otherwise_is_erased_with_acmes_bob(tmp_path: Path) -> None:
    """A call refused for its non-canonical ids is audited as sent ("b\\u200bob" in "ａｃｍｅ"); its record was
    sealed under a key of that spelling, which forget("bob") never found, so it stayed readable."""
    (tmp_path / "p.policy").write_text('policy "p"\nallow notes.add.\n')
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"), unicode="reject")
    gw.tool(lambda text: text, name="notes.add", schema={"type": "object"})
    with pytest.raises(ToolDenied, match="canonical form"):
        gw.call("notes.add", {"text": "refused"}, principal="b\u200bob", tenant="\uff41\uff43\uff4d\uff45")
    gw.call("notes.add", {"text": "kept"}, principal="bob", tenant="globex")
    assert gw.forget("bob", tenant="acme").subject_keys == 1
    assert [r["erased"] for r in gw.audit.rows()] == [True, False, False]
    gw.close()


def test_bobs_key_in_a_tenant_keeps_his_next_call_on_the_one_commit_path(tmp_path: Path) -> None:
    """A call whose sealing key is at hand writes its record inside the history section (one commit); the key
    of acme's bob is known after his first call, globex's bob's is not (his first call makes his own)."""
    (tmp_path / "wires.policy").write_text(WIRES)
    gw = Gateway(tmp_path / "wires.policy", database=str(tmp_path / "gw.db"))
    gw.tool(lambda to, amount: "sent", name="wire.send", schema={"type": "object"})
    joined: list[str | None] = []
    append_within = gw.audit.append_within

    def spy(cursor: Any, event: AuditEvent) -> Joined:
        joined.append(event.tenant)
        return append_within(cursor, event)

    gw.audit.append_within = spy  # type: ignore[method-assign]
    for tenant in ("acme", "acme", "globex", "globex"):
        gw.call("wire.send", {"to": "x", "amount": 1}, principal="bob", tenant=tenant)
    assert joined == ["acme", "globex"]  # each bob's first call made his key, in a transaction of its own
    assert gw.audit.can_join("bob", "acme") and not gw.audit.can_join("bob", None)
    gw.close()


# ---- erasure reaches the state store ------------------------------------------------------------------------------
NOTES = 'policy "notes"\nallow notes.add.\nlimit notes.add to 2 calls per hour per user.\n'
SESSION_NOTES = NOTES + "limit notes.add to 3 calls per hour per session.\n"


def _raw_redis(gw: Gateway) -> bytes:
    """Every key name and sorted-set member under the gateway's Redis prefix, as they are stored."""
    client, found = gw.store.client, []  # type: ignore[attr-defined]
    for name in client.scan_iter(f"{gw.store.prefix}:*"):  # type: ignore[attr-defined]
        found.append(name)
        if client.type(name) == b"zset":
            found += client.zrange(name, 0, -1)
    return b"\n".join(found)


def _note_gateway(tmp_path: Path, request: pytest.FixtureRequest, policy: str = NOTES) -> Gateway:
    gw = _gateway(tmp_path, "redis", request, policy=policy)
    gw.tool(lambda text: "noted", name="notes.add", schema={"type": "object"})
    return gw


def test_forget_erases_bobs_calls_from_every_redis_sorted_set_that_holds_them(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The finding: with ``state="redis://..."`` forget("bob") left bob's calls, arguments and all, in the sorted
    sets of his user, agent, session and tenant for the retention window (8 days). Tenant scoping holds: acme's
    bob goes, globex's bob, the bob without a tenant and alice stay; the stateful rules count what is left."""
    gw = _note_gateway(tmp_path, request, SESSION_NOTES)
    for text in ("alice-acme-note-1", "alice-acme-note-2"):
        gw.call("notes.add", {"text": text}, principal="alice", tenant="acme", session="s1")
    for tenant in ("acme", "globex", None):
        gw.call("notes.add", {"text": f"bob-{tenant}-secret"}, principal="bob", tenant=tenant, session="s1")
    gw.store.client.delete(gw.store._key(Scope.USER, "bob"))  # type: ignore[attr-defined]  # expired on its own
    assert b"bob-acme-secret" in _raw_redis(gw)  # still in the agent's, session's and tenant's sets
    with pytest.raises(ToolDenied):  # 3 calls this hour in acme's s1
        gw.call("notes.add", {"text": "x"}, principal="carol", tenant="acme", session="s1")

    report = gw.forget("bob", tenant="\uff41cme")
    assert report.state_calls == 1 and report.calls == 0  # the history is in Redis, not in the database
    raw = _raw_redis(gw)
    assert b"bob-acme-secret" not in raw
    assert b"bob-globex-secret" in raw and b"bob-None-secret" in raw and b"alice-acme-note-2" in raw
    assert [c.user for c in gw.store.calls(Scope.TENANT, "acme", 0, tenant="acme")] == ["alice", "alice"]
    assert [c.user for c in gw.store.calls(Scope.SESSION, "s1", 0, tenant="acme")] == ["alice", "alice"]
    with pytest.raises(ToolDenied):  # alice's own 2 calls still count
        gw.call("notes.add", {"text": "x"}, principal="alice", tenant="acme")
    gw.call("notes.add", {"text": "bob-acme-again"}, principal="bob", tenant="acme", session="s1")  # 2 of 3
    with pytest.raises(ToolDenied):
        gw.call("notes.add", {"text": "x"}, principal="carol", tenant="acme", session="s1")

    assert gw.forget("bob").state_calls == 3  # every tenant and none: globex's, the untenanted and the new one
    raw = _raw_redis(gw)
    assert b"bob" not in raw and raw.count(b"alice-acme-note") == 8  # in alice's, agent's, session's, tenant's
    assert gw.forget("bob").state_calls == 0
    gw.close()


def test_forget_matches_the_id_exactly_not_as_a_pattern(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Redis MATCH patterns read ``*``, ``?``, ``[...]`` and ``\\``: an id made of them must find its own calls
    (``b[o]b`` as a pattern matches bob, not itself) and no one else's."""
    gw = _note_gateway(tmp_path, request)
    hostile = 'b[o]b*?\\"x'
    for who in (hostile, "bob", "b"):
        gw.call("notes.add", {"text": f"note of {who}"}, principal=who)
    assert gw.forget(hostile).state_calls == 1
    assert gw.forget("b*").state_calls == 0
    assert sorted(c.user for c in gw.store.calls(Scope.AGENT, "agent", 0, tenant=None)) == ["b", "bob"]
    gw.close()


def test_a_call_of_a_user_being_erased_is_denied_until_the_erasure_ends(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A reservation committed while forget scans could land in a set the scan already passed and stay: while it
    runs, the commit script refuses the subject's calls (fail closed, nothing kept); others' calls go on."""
    gw = _note_gateway(tmp_path, request)
    with gw.store._erasing("bob"):  # type: ignore[attr-defined]
        with pytest.raises(ToolDenied, match="caller is being erased"):
            gw.call("notes.add", {"text": "bob-during-erasure"}, principal="bob")
        gw.call("notes.add", {"text": "alice-meanwhile"}, principal="alice")
    assert b"bob-during-erasure" not in _raw_redis(gw)
    assert gw.store.calls(Scope.USER, "bob", 0, tenant=None) == []
    gw.call("notes.add", {"text": "bob-after"}, principal="bob")  # erasure is no ban
    assert not list(gw.store.client.scan_iter(f"{gw.store.prefix}:erasing:*"))  # type: ignore[attr-defined]
    gw.close()


def test_forget_erases_a_state_database_of_its_own(tmp_path: Path) -> None:
    """``state`` may name another database than the audit's: its history rows were never erased."""
    (tmp_path / "p.policy").write_text(NOTES)
    state = tmp_path / "state.db"
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"), state=str(state))
    gw.tool(lambda text: "noted", name="notes.add", schema={"type": "object"})
    gw.call("notes.add", {"text": "bob-private-words"}, principal="bob")
    gw.call("notes.add", {"text": "alice-words"}, principal="alice")
    assert gw.forget("bob") == ForgetReport(subject_keys=1, calls=0, approvals=0, state_calls=1)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("state.db*"))
    assert b"bob-private-words" not in raw and b"alice-words" in raw
    gw.close()


def test_an_unreachable_state_store_leaves_the_audit_erased_and_says_to_run_forget_again(tmp_path: Path) -> None:
    """The state store cannot join the database's transaction: it is erased after it, so its failure leaves
    bob's audit keys destroyed (the chain whole) and an ErasureIncomplete, not a silent half-erasure."""
    (tmp_path / "p.policy").write_text('policy "p"\nallow notes.add.\n')  # stateless: Redis is never read
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"), state="redis://127.0.0.1:1/0")
    gw.tool(lambda text: "noted", name="notes.add", schema={"type": "object"})
    gw.call("notes.add", {"text": "bob-words"}, principal="bob")
    with pytest.raises(ErasureIncomplete, match=r"gateway database is erased .* run forget again"):
        gw.forget("bob")
    assert [r["erased"] for r in gw.audit.rows()] == [True, True] and gw.audit.verify().ok
    gw.close()


def test_forget_cli_erases_the_redis_state_too(tmp_path: Path, redis_url: str) -> None:
    """An operator erasing from the command line reaches the gateway's Redis with ``--state``."""
    who = f"bob-{uuid.uuid4().hex[:8]}"  # the default prefix: one this run shares with no one
    (tmp_path / "p.policy").write_text(NOTES)
    database = str(tmp_path / "gw.db")
    gw = Gateway(tmp_path / "p.policy", database=database, state=redis_url)
    gw.tool(lambda text: "noted", name="notes.add", schema={"type": "object"})
    gw.call("notes.add", {"text": f"{who}-secret"}, principal=who, tenant=who)
    assert f"{who}-secret".encode() in _raw_redis(gw)
    result = CliRunner().invoke(app, ["forget", who, "--yes", "-d", database, "--state", redis_url])
    assert result.exit_code == 0, result.output
    assert "0 history rows, 0 approval requests, 1 calls in the state store" in result.output
    assert who.encode() not in _raw_redis(gw)
    gw.close()
