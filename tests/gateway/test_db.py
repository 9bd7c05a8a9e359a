"""The gateway's database handle: the WAL stays bounded under writes that never pause."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from agentcore.gateway import db as gateway_db
from agentcore.gateway.audit import AuditEvent, AuditLog
from agentcore.gateway.db import Database


def test_wal_starts_over_under_writes_that_never_pause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Passive checkpoints alone never catch up with a writer that never pauses, so the WAL never restarts."""
    monkeypatch.setattr(gateway_db, "WAL_RESTART_PAGES", 64)
    path = tmp_path / "busy.db"
    log = AuditLog(Database(str(path)))
    appended, deadline = 0, time.monotonic() + 2.0  # several checkpoint intervals of back-to-back appends
    while time.monotonic() < deadline:
        log.append(AuditEvent(kind="decision", call_id=str(appended), tool="t.x", principal="p", detail={"n": 1}))
        appended += 1
    with sqlite3.connect(path) as reader:
        _busy, wal_frames, _copied = reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert wal_frames < appended, (wal_frames, appended)  # never restarted: at least one frame per append
    assert log.verify().ok and log.verify().records == appended
    log.db.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_snapshot_does_not_see_commits_made_during_it(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """What audit verify relies on: records and head read in one snapshot never disagree (the false alarm)."""
    url = str(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    reader, writer = AuditLog(Database(url)), AuditLog(Database(url))
    writer.append(AuditEvent(kind="decision", call_id="0", tool="t.x", principal="p"))
    count = "SELECT COUNT(*) FROM gateway_audit"
    with reader.db.snapshot() as cur:
        cur.execute(count)
        before = cur.fetchone()[0]
        writer.append(AuditEvent(kind="decision", call_id="1", tool="t.x", principal="p"))  # another connection
        cur.execute(count)
        assert cur.fetchone()[0] == before == 1
    assert reader.verify().records == 2
    reader.db.close()
    writer.db.close()
