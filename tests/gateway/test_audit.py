"""The audit chain: every kind of tampering is detected and named; records survive kill -9."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.errors import ConfigError
from agentcore.gateway.audit import AuditEvent, AuditLog
from agentcore.gateway.db import Database


def _log(url: str, n: int) -> AuditLog:
    log = AuditLog(Database(url))
    for i in range(n):
        log.append(AuditEvent(kind="decision", call_id=f"c{i}", tool="crm.lookup", principal="alice",
                              effect="allow", detail={"args": {"i": i}}))  # fmt: skip
    return log


SWAP_2_AND_3 = [
    "UPDATE gateway_audit SET seq = 100 WHERE seq = 2",
    "UPDATE gateway_audit SET seq = 2 WHERE seq = 3",
    "UPDATE gateway_audit SET seq = 3 WHERE seq = 100",
]
# insertion: shift records 3.. up by one and put a copy of record 2 (a valid hash of its own) at seq 3
INSERT_COPY_AT_3 = [
    "UPDATE gateway_audit SET seq = seq + 10 WHERE seq >= 3",
    "UPDATE gateway_audit SET seq = seq - 9 WHERE seq >= 13",
    "INSERT INTO gateway_audit SELECT 3, ts, kind, call_id, tool, principal, agent, session, tenant, effect, "
    "outcome, mode, bundle_hash, detail, key_id, prev_hash, hash FROM gateway_audit WHERE seq = 2",
]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    _log(str(tmp_path / "a.db"), 6).db.close()
    return tmp_path / "a.db"


def _tamper(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


def _verify(path: Path) -> tuple[bool, int | None, str | None]:
    result = AuditLog(Database(str(path))).verify()
    return result.ok, result.first_bad, result.problem


def test_intact_chain_verifies(db_path: Path) -> None:
    assert _verify(db_path) == (True, None, None)


@pytest.mark.parametrize(
    ("statements", "first_bad", "problem"),
    [
        (["UPDATE gateway_audit SET principal = 'mallory' WHERE seq = 3"], 3, "modified"),
        (['UPDATE gateway_audit SET detail = \'{"args":{"i":99}}\' WHERE seq = 4'], 4, "modified"),
        (["DELETE FROM gateway_audit WHERE seq = 2"], 2, "deleted"),
        (["DELETE FROM gateway_audit WHERE seq = 6"], 6, "deleted"),
        (SWAP_2_AND_3, 2, "link"),
        (INSERT_COPY_AT_3, 3, "link"),
    ],
)
def test_tampering_is_detected_and_named(db_path: Path, statements: list[str], first_bad: int, problem: str) -> None:
    _tamper(db_path, *statements)
    ok, bad, text = _verify(db_path)
    assert not ok and bad == first_bad and problem in (text or "")


def test_cli_verify_exit_codes_and_export(db_path: Path) -> None:
    runner = CliRunner()
    intact = runner.invoke(app, ["gateway", "audit", "verify", "--database", str(db_path)])
    assert intact.exit_code == 0, intact.output
    assert "6 records" in intact.output
    exported = runner.invoke(app, ["gateway", "audit", "export", "--jsonl", "--database", str(db_path)])
    lines = exported.output.strip().splitlines()
    assert exported.exit_code == 0 and len(lines) == 6 and '"seq":1' in lines[0]
    _tamper(db_path, "UPDATE gateway_audit SET tool = 'x' WHERE seq = 5")
    broken = runner.invoke(app, ["gateway", "audit", "verify", "--database", str(db_path)])
    assert broken.exit_code == 1
    assert "record 5" in broken.output
    missing = runner.invoke(app, ["gateway", "audit", "verify", "--database", str(db_path.parent / "typo.db")])
    assert missing.exit_code == 2 and not (db_path.parent / "typo.db").exists()


def test_postgres_chain(pg_url: str) -> None:
    log = _log(pg_url, 5)
    assert log.verify().ok
    with log.db.write("x") as cur:
        cur.execute("UPDATE gateway_audit SET effect = 'deny' WHERE seq = 2")
    result = log.verify()
    assert (result.ok, result.first_bad) == (False, 2)
    log.db.close()


def _event(i: int) -> AuditEvent:
    return AuditEvent(kind="decision", call_id=f"c{i}", tool="t.x", principal="p", detail={"i": i})


HEADER = ("seq", "ts", "kind", "call_id", "tool", "principal", "agent", "session", "tenant", "effect", "outcome",
          "mode", "bundle_hash")  # fmt: skip


@pytest.mark.parametrize("keyed", [False, True])
def test_record_hash_follows_the_documented_format(tmp_path: Path, keyed: bool) -> None:
    """docs/gateway.md tells auditors how to recompute a hash without agentcore; this is that recipe, read straight
    from the database file with sqlite3, hashlib and hmac."""
    import hmac

    from agentcore.gateway.audit_keys import ChainKeys

    secret = "s" * 40
    keys = ChainKeys.parse(f"k1:{secret}", "test") if keyed else None
    log = AuditLog(Database(str(tmp_path / "a.db")), keys=keys)
    for i in range(3):
        log.append(_event(i))
    log.db.close()
    conn = sqlite3.connect(tmp_path / "a.db")
    conn.row_factory = sqlite3.Row
    previous = "0" * 64
    for row in conn.execute("SELECT * FROM gateway_audit ORDER BY seq"):
        if row["key_id"] is None:  # plain: SHA-256 of [columns..., prev_hash] + detail
            text = json.dumps([*(row[c] for c in HEADER), row["prev_hash"]], ensure_ascii=False, separators=(",", ":"))
            expected = hashlib.sha256((text + row["detail"]).encode("utf-8")).hexdigest()
        else:  # keyed: HMAC-SHA-256 of [columns..., key_id, prev_hash] + detail
            fields = [*(row[c] for c in HEADER), row["key_id"], row["prev_hash"]]
            text = json.dumps(fields, ensure_ascii=False, separators=(",", ":")) + row["detail"]
            expected = hmac.new(secret.encode(), text.encode("utf-8"), hashlib.sha256).hexdigest()
        assert row["key_id"] == ("k1" if keyed else None)
        assert row["prev_hash"] == previous and row["hash"] == expected
        assert row["detail"].startswith("sealed:") and row["principal"] == ""  # personal fields are sealed
        previous = row["hash"]
    conn.close()


def test_two_writers_on_one_file_keep_one_chain(tmp_path: Path) -> None:
    """Each log links its fast appends to its own latest record; the other's appends in between force the
    primary-key conflict and a re-read of the head, never a fork."""
    url = str(tmp_path / "shared.db")
    first, second = AuditLog(Database(url)), AuditLog(Database(url))
    seqs = [log.append(_event(i)) for i, log in enumerate([first, first, second, first, second, second, first])]
    assert seqs == list(range(1, 8))
    result = first.verify()
    assert result.ok and result.records == 7, result
    assert [row["call_id"] for row in first.rows()] == [f"c{i}" for i in range(7)]


def test_after_a_conflict_the_next_batches_read_the_head_first(tmp_path: Path) -> None:
    url = str(tmp_path / "shared.db")
    first, second = AuditLog(Database(url)), AuditLog(Database(url))
    first.append(_event(0))
    second.append(_event(1))
    assert first._contended == 0
    first.append(_event(2))  # its guess (seq 2) is taken: the conflict switches it to reading the head
    assert first._contended == 64
    second.append(_event(3))
    first.append(_event(4))  # read the head first: no conflict, one fewer batch to go
    assert first._contended == 63 and second._contended == 64
    assert first.verify().ok and first.verify().records == 5


def test_one_batch_of_records_is_chained_in_order(tmp_path: Path) -> None:
    log = AuditLog(Database(str(tmp_path / "a.db")))
    log.append(_event(0))
    values = []
    for i in (1, 2, 3):
        event = _event(i)
        values.append({"kind": event.kind, "call_id": event.call_id, "tool": event.tool, "principal": "",
                       "agent": None, "session": None, "tenant": None, "effect": event.effect, "outcome": None,
                       "mode": "enforce", "bundle_hash": "", "detail": "{}", "key_id": None})  # fmt: skip
    assert log._write(values) == [2, 3, 4]  # one statement for the three
    result = log.verify()
    assert result.ok and result.records == 4, result
    assert [row["call_id"] for row in log.rows()] == ["c0", "c1", "c2", "c3"]


def test_a_rolled_back_append_is_not_linked_to(tmp_path: Path) -> None:
    log = AuditLog(Database(str(tmp_path / "a.db")))
    assert log.append(_event(0)) == 1

    def fail(cursor: object) -> None:
        raise RuntimeError("related state could not be written")

    with pytest.raises(RuntimeError):
        log.append(_event(1), also=fail)  # the record and the related state roll back together
    assert log.append(_event(2)) == 2
    assert log.verify().ok and [row["call_id"] for row in log.rows()] == ["c0", "c2"]


WRITER = textwrap.dedent(
    """
    import sys
    from agentcore.gateway.audit import AuditEvent, AuditLog
    from agentcore.gateway.db import Database
    log = AuditLog(Database(sys.argv[1]))
    i = 0
    while True:
        seq = log.append(AuditEvent(kind="decision", call_id=str(i), tool="t.x", principal="p", detail={"i": i}))
        print(seq, flush=True)  # printed only after the commit returned
        i += 1
    """
)


def test_records_survive_kill_9(tmp_path: Path, killed_after: Callable[[list[str], int], int]) -> None:
    db = tmp_path / "crash.db"
    acknowledged = killed_after(["-c", WRITER, str(db)], 300)
    result = AuditLog(Database(str(db))).verify()
    assert result.ok, result
    assert result.records >= acknowledged  # every acknowledged record is on disk, chain intact


@pytest.mark.parametrize(("durability", "synchronous"), [("process", 1), ("power", 2)])
def test_durability_setting_controls_fsync(tmp_path: Path, durability: str, synchronous: int) -> None:
    db = Database(str(tmp_path / "d.db"), durability=durability)  # type: ignore[arg-type]
    with db.read() as cur:
        cur.execute("PRAGMA synchronous")
        assert cur.fetchone()[0] == synchronous  # NORMAL survives kill -9; FULL fsyncs every commit
        cur.execute("PRAGMA journal_mode")
        assert cur.fetchone()[0] == "wal"
    db.close()
    with pytest.raises(ConfigError, match="durability"):
        Database(str(tmp_path / "d.db"), durability="sometimes")  # type: ignore[arg-type]


def test_a_database_from_a_newer_gateway_is_refused(tmp_path: Path) -> None:
    from agentcore import Gateway
    from agentcore.gateway.schema import CURRENT

    Gateway(None, database=str(tmp_path / "g.db")).close()
    _tamper(tmp_path / "g.db", f"UPDATE gateway_schema SET version = {CURRENT + 1}")
    with pytest.raises(ConfigError, match="newer than this agentcore understands"):
        Gateway(None, database=str(tmp_path / "g.db"))
