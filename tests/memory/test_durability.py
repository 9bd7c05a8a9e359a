"""SQLite durability: concurrent writers, a writer killed mid-stream, migrations, and forget on disk."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from agentcore.memory import MemoryStore, SchemaVersionError
from agentcore.memory.database import create_memory_engine
from agentcore.memory.migrations import LATEST_VERSION, migrate

WRITER = """
import sys
from agentcore.memory import MemoryStore
store = MemoryStore(sys.argv[1])
worker, count = sys.argv[2], int(sys.argv[3])
for index in range(count):
    event = store.add_event(f"actor-{index % 7}", f"session-{worker}", "user", f"worker {worker} event {index}")
    print(event.id, flush=True)
"""


def _writer(url: str, worker: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, worker, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _concurrent_writers(url: str, per_worker: int) -> None:
    workers = [_writer(url, str(worker), per_worker) for worker in range(4)]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    for worker, (_, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
        assert stderr == ""  # no error or retry warning surfaced to the caller
    acknowledged = {int(line) for stdout, _ in outputs for line in stdout.split()}
    assert len(acknowledged) == 4 * per_worker
    with MemoryStore(url) as store:
        assert store.stats().events == 4 * per_worker
        for worker in range(4):
            texts = [e.text for a in range(7) for e in store.list_events(f"actor-{a}", f"session-{worker}", limit=1000)]
            assert sorted(texts) == sorted(f"worker {worker} event {index}" for index in range(per_worker))


def test_four_processes_of_a_thousand_writes_all_persist(tmp_path: Path) -> None:
    _concurrent_writers(f"sqlite:///{tmp_path / 'memory.db'}", 1000)


def test_four_concurrent_writer_processes_on_postgresql(memory_postgres_url: str) -> None:
    """The same on PostgreSQL, in the run's throwaway database (its public schema; other tests use their own)."""
    _concurrent_writers(memory_postgres_url, 250)


def test_a_killed_writer_loses_nothing_it_acknowledged(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    url = f"sqlite:///{path}"
    MemoryStore(url).close()  # schema first, so the kill lands in the middle of event writes
    writer = _writer(url, "k", 100_000)
    assert writer.stdout is not None
    acknowledged = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < 300 and time.monotonic() < deadline:
        acknowledged.append(int(writer.stdout.readline()))
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert len(acknowledged) == 300
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    connection.close()
    with MemoryStore(url) as store:
        stored = {e.id for a in range(7) for e in store.list_events(f"actor-{a}", "session-k", limit=100_000)}
        assert set(acknowledged) <= stored
        store.add_event("actor-0", "session-k", "user", "the database still takes writes")


def test_upgrading_a_version_1_database_keeps_its_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    engine = create_memory_engine(url)
    assert migrate(engine, target=1) == 1
    with engine.begin() as connection:  # rows written by the version-1 library, before full-text search existed
        connection.execute(
            text(
                "INSERT INTO memory_events (actor_id, session_id, role, text, payload, metadata, created_at) "
                "VALUES ('alice', 's1', 'user', 'my violin teacher lives in Vienna', NULL, '{}', '2024-01-01 10:00:00')"
            )
        )
        assert not engine.dialect.has_table(connection, "memory_events_fts")
    engine.dispose()
    with MemoryStore(url) as store:
        assert store.schema_version == LATEST_VERSION == store.stats().schema_version
        assert [e.text for e in store.list_events("alice", "s1")] == ["my violin teacher lives in Vienna"]
        hits = store.search_events("alice", "violin Vienna", mode="fulltext")
        assert [hit.event.text for hit in hits] == ["my violin teacher lives in Vienna"]


def test_a_database_from_a_newer_agentcore_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    MemoryStore(url).close()
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO memory_schema_version VALUES (:v, 'from the future', '2030-01-01 00:00:00')"),
            {"v": LATEST_VERSION + 1},
        )
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="upgrade agentcore"):
        MemoryStore(url)


def test_forget_leaves_no_trace_in_the_raw_database_file(store: MemoryStore, tmp_path: Path) -> None:
    secrets = ["zebracornsecret", "Xylophonequartz", "forgetme-actor-7"]
    for index in range(30):
        store.add_event(secrets[2], f"s{index % 3}", "user", f"{secrets[0]} number {index} and {secrets[1]}")
        store.add_record(secrets[2], "/users/forget/facts", f"{secrets[0]} fact {index} {secrets[1]}")
    store.add_event("keeper", "s1", "user", "an unrelated memory that must stay")
    store.search_events(secrets[2], secrets[0])  # give the events embeddings too
    vector = store.embed(secrets[2], [f"{secrets[0]} fact 3 {secrets[1]}"])[0].astype("<f4").tobytes()
    store.forget(secrets[2])
    files = sorted(tmp_path.glob("memory.db*"))
    raw = b"".join(path.read_bytes() for path in files)
    assert b"an unrelated memory that must stay" in raw  # the scan sees live data, so absence below means something
    for secret in secrets:
        for encoded in (secret.encode(), secret.lower().encode()):
            assert encoded not in raw, f"{secret!r} survives in {[p.name for p in files]}"
    assert vector[:64] not in raw
