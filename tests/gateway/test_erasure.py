"""forget(user) erases a person from memory and the gateway: no byte of them left in the database files, the audit
chain still verifies, and the export shows their records as erased."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore import ApprovalRequired, Gateway, MemoryStore, forget
from agentcore.cli import app
from agentcore.gateway.anchors import JsonlAnchorSink
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.audit_keys import ChainKeys
from agentcore.gateway.db import Database
from agentcore.gateway.state import _cached_record
from agentcore.policies.context import Scope

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
