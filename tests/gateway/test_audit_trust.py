"""The audit log against someone who controls the database: keyed chain, signed anchors, snapshot verify, prune.

Each attack is run as such an attacker would, with sqlite3 and the documented (plain SHA-256) recipe; the table
shows which settings detect it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.errors import ConfigError
from agentcore.gateway import audit as audit_module
from agentcore.gateway.anchors import JsonlAnchorSink
from agentcore.gateway.audit import AuditEvent, AuditLog
from agentcore.gateway.audit_keys import ChainKeys
from agentcore.gateway.db import Database
from agentcore.gateway.sealing import subject_ref

KEY_TEXT = "k1:" + "a" * 40
HEADER = ("seq", "ts", "kind", "call_id", "tool", "principal", "agent", "session", "tenant", "effect", "outcome",
          "mode", "bundle_hash", "prev_hash")  # fmt: skip


def _event(i: int, principal: str = "alice", effect: str = "allow") -> AuditEvent:
    return AuditEvent(kind="decision", call_id=f"c{i}", tool="pay.charge", principal=principal, effect=effect,
                      detail={"args": {"i": i, "note": f"private note of {principal}"}})  # fmt: skip


def _fill(path: Path, keys: ChainKeys | None, anchors: Path | None) -> None:
    log = AuditLog(Database(str(path)), keys=keys, anchors=JsonlAnchorSink(anchors) if anchors else None)
    for i in range(10):
        log.append(_event(i, "bob" if i in (3, 6) else "alice", "deny" if i == 4 else "allow"))
    log.close()
    log.db.close()


def _rechain(conn: sqlite3.Connection) -> None:
    """Recompute every hash with the documented plain recipe, renumbering from 1, and move the head."""
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM gateway_audit ORDER BY seq")]
    conn.execute("DELETE FROM gateway_audit")
    previous = "0" * 64
    for seq, row in enumerate(rows, 1):
        row.update(seq=seq, prev_hash=previous, key_id=None)
        text = json.dumps([row[c] for c in HEADER], ensure_ascii=False, separators=(",", ":")) + row["detail"]
        row["hash"] = previous = hashlib.sha256(text.encode("utf-8")).hexdigest()
        conn.execute(f"INSERT INTO gateway_audit ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                     list(row.values()))  # fmt: skip
    conn.execute("UPDATE gateway_audit_head SET seq = ?, hash = ?", (len(rows), previous))


def rewrite(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE gateway_audit SET tool = 'nothing.happened' WHERE seq = 5")
    _rechain(conn)


def deny_into_allow(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE gateway_audit SET effect = 'allow' WHERE effect = 'deny'")
    _rechain(conn)


def delete_one_users_rows(conn: sqlite3.Connection) -> None:
    """Sealed records name only a key id; the key table's subject hash gives bob's rows away."""
    key_ids = [r[0] for r in conn.execute("SELECT id FROM gateway_audit_subjects WHERE subject = ?",
                                           (subject_ref("bob"),))]  # fmt: skip
    for key_id in key_ids:
        conn.execute("DELETE FROM gateway_audit WHERE detail LIKE ?", (f"sealed:{key_id}:%",))
    _rechain(conn)


def truncate_tail_and_head(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM gateway_audit WHERE seq > 7")
    seq, hash_ = conn.execute("SELECT seq, hash FROM gateway_audit WHERE seq = 7").fetchone()
    conn.execute("UPDATE gateway_audit_head SET seq = ?, hash = ?", (seq, hash_))


def delete_everything(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM gateway_audit")
    conn.execute("DELETE FROM gateway_audit_head")


def drop_tables(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE gateway_audit")
    conn.execute("DROP TABLE gateway_audit_head")


ATTACKS: dict[str, Callable[[sqlite3.Connection], None]] = {
    "rewrite with recomputed hashes": rewrite,
    "deny edited into allow, hashes recomputed": deny_into_allow,
    "one user's rows deleted, hashes recomputed": delete_one_users_rows,
    "last 3 rows deleted and head updated": truncate_tail_and_head,
    "every row and the head deleted": delete_everything,
    "both tables dropped": drop_tables,
}
# attack -> detected (no key, no anchors), (key only), (key and anchors)
DETECTED = {
    "rewrite with recomputed hashes": (False, True, True),
    "deny edited into allow, hashes recomputed": (False, True, True),
    "one user's rows deleted, hashes recomputed": (False, True, True),
    "last 3 rows deleted and head updated": (False, False, True),
    "every row and the head deleted": (False, False, True),
    "both tables dropped": (False, False, True),
}
SETTINGS = {"plain": (False, False), "key": (True, False), "key+anchors": (True, True)}


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attacks_by_an_owner_of_the_database(tmp_path: Path, attack: str, setting: str) -> None:
    keyed, anchored = SETTINGS[setting]
    keys = ChainKeys.parse(KEY_TEXT, "test") if keyed else None
    anchors = tmp_path / "anchors.jsonl" if anchored else None
    path = tmp_path / "audit.db"
    _fill(path, keys, anchors)
    with sqlite3.connect(path) as conn:
        ATTACKS[attack](conn)
    log = AuditLog(Database(str(path)), keys=keys)  # as the verifier finds the database: tables recreated if dropped
    result = log.verify(JsonlAnchorSink(anchors) if anchors else None)
    log.db.close()
    assert (not result.ok) is DETECTED[attack][list(SETTINGS).index(setting)], result


def test_anchors_report_the_last_verified_checkpoint(tmp_path: Path) -> None:
    keys, anchors = ChainKeys.parse(KEY_TEXT, "test"), tmp_path / "anchors.jsonl"
    _fill(tmp_path / "a.db", keys, anchors)
    log = AuditLog(Database(str(tmp_path / "a.db")), keys=keys)
    result = log.verify(JsonlAnchorSink(anchors))
    assert result.ok and result.keyed and result.anchored_seq == 10 and result.anchored_at is not None
    lines = anchors.read_text().splitlines()
    forged = json.loads(lines[-1]) | {"seq": 11}  # a line the attacker appends: its signature no longer verifies
    anchors.write_text("\n".join([*lines, json.dumps(forged)]) + "\n")
    bad = log.verify(JsonlAnchorSink(anchors))
    assert not bad.ok and "not signed by a trusted key" in (bad.problem or "")
    log.db.close()


def test_anchor_cadence_every_n_records(tmp_path: Path) -> None:
    from agentcore.gateway.anchors import Anchorer

    keys, anchors = ChainKeys.parse(KEY_TEXT, "test"), tmp_path / "anchors.jsonl"
    log = AuditLog(Database(str(tmp_path / "a.db")), keys=keys)
    log.anchorer = Anchorer(JsonlAnchorSink(anchors), keys.current.signing_key(), every=5, interval_s=60)
    for i in range(5):
        log.append(_event(i))
    deadline = time.monotonic() + 10
    while not (anchors.exists() and anchors.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.02)  # the whole line: the file exists a moment before its checkpoint is written
    assert json.loads(anchors.read_text())["seq"] == 5  # after 5 records, long before the 60 s interval
    for i in range(5, 12):
        log.append(_event(i))
    log.close()
    assert json.loads(anchors.read_text().splitlines()[-1])["seq"] == 12  # and one at close
    log.db.close()


def test_rotated_keys_verify_old_and_new_records(tmp_path: Path) -> None:
    path = str(tmp_path / "a.db")
    old = ChainKeys.parse(KEY_TEXT, "test")
    log = AuditLog(Database(path), keys=old)
    log.append(_event(0))
    log.db.close()
    both = ChainKeys.parse("k2:" + "b" * 40 + "\n" + KEY_TEXT, "test")
    log = AuditLog(Database(path), keys=both)
    log.append(_event(1))
    assert [r["key_id"] for r in log.rows()] == ["k1", "k2"] and log.verify().ok
    with pytest.raises(ConfigError, match="k1"):  # the old key is needed for the old record
        AuditLog(log.db, keys=ChainKeys.parse("k2:" + "b" * 40, "test")).verify()
    with pytest.raises(ConfigError, match="needs that key"):  # a keyed chain cannot be verified without its key
        AuditLog(log.db).verify()
    log.db.close()


def test_without_a_key_the_gateway_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(audit_module, "_unkeyed_warned", False)
    log = AuditLog(Database(str(tmp_path / "a.db")))
    with caplog.at_level(logging.WARNING, logger="agentcore.gateway.audit"):
        log.append(_event(0))
        log.append(_event(1))
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "not keyed" in caplog.records[0].message
    log.db.close()


def test_cli_verify_needs_the_key_and_checks_anchors(tmp_path: Path) -> None:
    keys_file, anchors = tmp_path / "audit.key", tmp_path / "anchors.jsonl"
    keys_file.write_text(f"# rotate by adding a line on top\n{KEY_TEXT}\n")
    _fill(tmp_path / "a.db", ChainKeys.from_file(keys_file), anchors)
    runner = CliRunner()
    base = ["gateway", "audit", "verify", "-d", str(tmp_path / "a.db")]
    no_key = runner.invoke(app, base)
    assert no_key.exit_code == 2 and "needs that key" in no_key.output
    good = runner.invoke(app, [*base, "--key-file", str(keys_file), "--anchors", str(anchors)])
    assert good.exit_code == 0 and "10 records, keyed" in good.output and "checkpoint: record 10" in good.output
    with sqlite3.connect(tmp_path / "a.db") as conn:
        truncate_tail_and_head(conn)
    cut = runner.invoke(app, [*base, "--key-file", str(keys_file), "--anchors", str(anchors)])
    assert cut.exit_code == 1 and "anchor vouches for record 10 but the chain ends at 7" in cut.output


APPENDER = textwrap.dedent(
    """
    import sys
    from agentcore.gateway.audit import AuditEvent, AuditLog
    from agentcore.gateway.audit_keys import ChainKeys
    from agentcore.gateway.db import Database
    log = AuditLog(Database(sys.argv[1]), keys=ChainKeys.parse(sys.argv[2], "test"))
    i = 0
    while True:
        log.append(AuditEvent(kind="decision", call_id=str(i), tool="t.x", principal="p" + str(i % 7), detail={"i": i}))
        i += 1
        if i == 20:
            print("ready", flush=True)
    """
)


def _concurrent_verifies(url: str, appenders: int = 1, rounds: int = 15) -> None:
    keys = ChainKeys.parse(KEY_TEXT, "test")
    log = AuditLog(Database(url), keys=keys)
    log.append(_event(0))
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, url, KEY_TEXT], stdout=subprocess.PIPE, text=True)
             for _ in range(appenders)]  # fmt: skip
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        counts: list[int] = []
        deadline = time.monotonic() + 60
        while len(counts) < rounds or counts[-1] < counts[0] + 100:  # until appends really went on meanwhile
            result = log.verify()  # the finding: 1 in 15 verifies during appends reported a deletion
            assert result.ok, result
            counts.append(result.records)
            assert time.monotonic() < deadline, counts
        assert counts == sorted(counts)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    log.db.close()


def test_verify_reads_one_snapshot_while_another_process_appends(tmp_path: Path) -> None:
    _concurrent_verifies(str(tmp_path / "busy.db"))


def test_verify_reads_one_snapshot_on_postgres_with_several_writers(pg_url: str) -> None:
    _concurrent_verifies(pg_url, appenders=3, rounds=10)


def test_prune_cli_removes_old_records_and_a_checkpoint_vouches_for_them(tmp_path: Path) -> None:
    keys_file, anchors, path = tmp_path / "audit.key", tmp_path / "anchors.jsonl", tmp_path / "a.db"
    keys_file.write_text(KEY_TEXT + "\n")
    keys = ChainKeys.from_file(keys_file)
    log = AuditLog(Database(str(path)), keys=keys, anchors=JsonlAnchorSink(anchors))
    for i in range(8):
        log.append(_event(i))
    cutoff = time.time()
    time.sleep(0.01)
    for i in range(8, 11):
        log.append(_event(i))
    log.close()
    log.db.close()
    runner = CliRunner()
    day = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(cutoff)) + f".{int(cutoff % 1 * 1e6):06d}"
    pruned = runner.invoke(app, ["gateway", "audit", "prune", "--before", day, "-d", str(path), "-k", str(keys_file),
                                 "-a", str(anchors)])  # fmt: skip
    assert pruned.exit_code == 0 and "pruned 8 records" in pruned.output, pruned.output
    verify = ["gateway", "audit", "verify", "-d", str(path), "-k", str(keys_file), "-a", str(anchors)]
    ok = runner.invoke(app, verify)
    assert ok.exit_code == 0 and "3 records" in ok.output and "records 1-8 pruned" in ok.output, ok.output
    with sqlite3.connect(path) as conn:  # pretend less was pruned: delete the next record and move the base
        seq, hash_ = conn.execute("SELECT seq, hash FROM gateway_audit WHERE seq = 9").fetchone()
        conn.execute("DELETE FROM gateway_audit WHERE seq = 9")
        conn.execute("UPDATE gateway_audit_base SET seq = ?, hash = ?", (seq, hash_))
    forged = runner.invoke(app, verify)
    assert forged.exit_code == 1 and "pruned-prefix checkpoint was modified" in forged.output
    bad_date = runner.invoke(app, ["gateway", "audit", "prune", "--before", "last tuesday", "-d", str(path)])
    assert bad_date.exit_code == 2


def test_prune_without_anchors_still_vouches_with_the_key(tmp_path: Path) -> None:
    keys = ChainKeys.parse(KEY_TEXT, "test")
    log = AuditLog(Database(str(tmp_path / "a.db")), keys=keys)
    for i in range(5):
        log.append(_event(i))
    report = log.prune(time.time() + 1)  # everything is older: the chain is empty and starts after record 5
    assert (report.removed, report.pruned_through) == (5, 5)
    log.append(_event(5))
    result = log.verify()
    assert result.ok and result.records == 1 and result.pruned_through == 5
    with log.db.write("t") as cur:  # an attacker deletes the base to hide a pruned (or deleted) prefix
        cur.execute("DELETE FROM gateway_audit_base")
    assert not log.verify().ok
    log.db.close()


def test_gateway_takes_key_and_anchors_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcore import Gateway

    monkeypatch.setenv("AGENTCORE_AUDIT_KEY", KEY_TEXT)
    monkeypatch.setenv("AGENTCORE_AUDIT_ANCHORS", str(tmp_path / "anchors.jsonl"))
    gw = Gateway(None, database=str(tmp_path / "g.db"))
    gw.tool(lambda: "ok", name="t.x")
    with pytest.raises(Exception, match="denied"):
        gw.call("t.x", {}, principal="alice")
    gw.close()
    log = AuditLog(Database(str(tmp_path / "g.db")), keys=ChainKeys.parse(KEY_TEXT, "test"))
    result = log.verify(JsonlAnchorSink(tmp_path / "anchors.jsonl"))
    assert result.ok and result.keyed and result.anchored_seq == 1
    log.db.close()


def test_an_edited_ciphertext_is_a_modified_record_and_unreadable(tmp_path: Path) -> None:
    log = AuditLog(Database(str(tmp_path / "a.db")), keys=ChainKeys.parse(KEY_TEXT, "test"))
    log.append(_event(0))
    log.append(_event(1))
    with log.db.write("t") as cur:
        cur.execute(
            "UPDATE gateway_audit SET detail = substr(detail, 1, length(detail) - 8) || 'AAAAAAA=' WHERE seq = 2"
        )
    result = log.verify()
    assert (result.ok, result.first_bad) == (False, 2)
    assert [r["erased"] for r in log.rows()] == [False, True]
    log.db.close()


def test_a_version_1_database_is_migrated(tmp_path: Path) -> None:
    """Version 1 had no key id column; its plain records verify unchanged after the column is added."""
    from agentcore import Gateway

    path = tmp_path / "g.db"
    log = AuditLog(Database(str(path)), seal=False)
    log.append(_event(0))
    log.db.close()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE gateway_schema (id INTEGER PRIMARY KEY, version INTEGER)")
        conn.execute("INSERT INTO gateway_schema VALUES (1, 1)")
        conn.execute("ALTER TABLE gateway_audit DROP COLUMN key_id")
    gw = Gateway(None, database=str(path))
    assert gw.audit.verify().ok
    gw.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM gateway_schema").fetchone() == (2,)


def test_prune_refuses_a_tampered_chain(tmp_path: Path) -> None:
    """Pruning deletes the evidence: a deleted record in the prefix must not disappear into a fresh base."""
    from agentcore.gateway.audit import AuditIntegrityError

    log = AuditLog(Database(str(tmp_path / "a.db")), keys=ChainKeys.parse(KEY_TEXT, "test"))
    for i in range(5):
        log.append(_event(i))
    with log.db.write("t") as cur:
        cur.execute("DELETE FROM gateway_audit WHERE seq = 2")
    with pytest.raises(AuditIntegrityError, match="record 2"):
        log.prune(time.time() + 1)
    assert [r["seq"] for r in log.rows()] == [1, 3, 4, 5]
    log.db.close()


@pytest.mark.parametrize("attack", ["last rows and head", "every row and head", "record downgraded to plain"])
def test_attacks_on_postgres_are_detected_with_key_and_anchors(pg_url: str, tmp_path: Path, attack: str) -> None:
    keys, anchors = ChainKeys.parse(KEY_TEXT, "test"), JsonlAnchorSink(tmp_path / "anchors.jsonl")
    log = AuditLog(Database(pg_url), keys=keys, anchors=anchors)
    for i in range(6):
        log.append(_event(i))
    log.close()
    with log.db.write("t") as cur:
        if attack == "last rows and head":
            cur.execute("DELETE FROM gateway_audit WHERE seq > 3")
            cur.execute("UPDATE gateway_audit_head SET seq = 3, hash = (SELECT hash FROM gateway_audit WHERE seq = 3)")
        elif attack == "every row and head":
            cur.execute("DELETE FROM gateway_audit")
            cur.execute("DELETE FROM gateway_audit_head")
        else:
            cur.execute("UPDATE gateway_audit SET key_id = NULL, effect = 'deny' WHERE seq = 6")
    detected = log.verify(anchors)
    assert not detected.ok, detected
    if attack != "record downgraded to plain":
        assert log.verify().ok  # the key alone cannot tell: the remaining chain is consistent
        assert "an anchor vouches for record 6" in (detected.problem or "")
    log.db.close()


def test_prune_on_postgres(pg_url: str, tmp_path: Path) -> None:
    keys, anchors = ChainKeys.parse(KEY_TEXT, "test"), JsonlAnchorSink(tmp_path / "anchors.jsonl")
    log = AuditLog(Database(pg_url), keys=keys, anchors=anchors)
    for i in range(6):
        log.append(_event(i))
    log.anchorer.flush()  # type: ignore[union-attr]
    assert log.prune(time.time() + 1).removed == 6
    log.append(_event(6))
    log.close()
    result = log.verify(anchors)
    assert result.ok and result.records == 1 and result.pruned_through == 6 and result.anchored_seq == 7
    log.db.close()


def test_a_failing_anchor_sink_never_blocks_appends_or_close(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Unreachable:
        def append(self, checkpoint: object) -> None:
            raise OSError("object store unreachable")

        def read(self) -> list[object]:
            return []

    log = AuditLog(Database(str(tmp_path / "a.db")), keys=ChainKeys.parse(KEY_TEXT, "test"), anchors=Unreachable())
    assert log.append(_event(0)) == 1
    with caplog.at_level(logging.ERROR, logger="agentcore.gateway.anchors"):
        log.close()
    assert "object store unreachable" in caplog.text
    log.db.close()
