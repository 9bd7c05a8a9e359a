"""One database handle for the gateway's tables: SQLAlchemy engine for schema, a raw DBAPI connection for speed.

Audit appends and rate-limit reservations must be serialised across processes and must be cheap (tens of µs),
so they run as short explicit write transactions on one raw connection: ``BEGIN IMMEDIATE`` on SQLite, a
transaction-scoped advisory lock on PostgreSQL. Durability is a setting: ``"process"`` (default) survives a
crash of the process (SQLite WAL, synchronous=NORMAL); ``"power"`` fsyncs every commit (synchronous=FULL).
WAL checkpoints (which fsync) run on a background thread instead of inside a caller's commit, so they do not
show up as multi-millisecond tail latencies on the call path.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError
from sqlmodel import SQLModel

from agentcore.errors import ConfigError

log = logging.getLogger(__name__)
Durability = Literal["process", "power"]
DEFAULT_URL = "sqlite:///.agentcore/agentcore.db"


def resolve_url(url: str | None, *, create_folder: bool = True) -> str:
    """``None`` means the default file under the working directory; a bare path means a SQLite file."""
    if url is None:
        url = DEFAULT_URL
    elif "://" not in url:
        url = f"sqlite:///{url}"
    parsed = make_url(url)
    if create_folder and parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return url


class Database:
    """Engine + one serialised raw connection. Thread-safe; several processes may share one database."""

    def __init__(self, url: str | None = None, *, durability: Durability = "process", busy_timeout_s: float = 30.0):
        if durability not in ("process", "power"):
            raise ConfigError(f"durability must be 'process' or 'power', not {durability!r}")
        self.url = resolve_url(url)
        self.durability = durability
        self.backend = make_url(self.url).get_backend_name()
        if self.backend not in ("sqlite", "postgresql"):
            raise ConfigError(
                f"gateway database {self.backend!r} is not supported; use a sqlite:/// path or a postgresql:// URL"
            )
        self.engine: Engine = create_engine(self.url)
        if self.backend == "sqlite":
            synchronous = "FULL" if durability == "power" else "NORMAL"
            busy_ms = int(busy_timeout_s * 1000)

            @event.listens_for(self.engine, "connect")
            def _pragmas(dbapi_conn: Any, _record: Any) -> None:
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute(f"PRAGMA synchronous={synchronous}")
                cur.execute(f"PRAGMA busy_timeout={busy_ms}")
                cur.close()

        self._lock = threading.RLock()
        self._raw: Any = None
        self._checkpointer: _Checkpointer | None = None

    def create(self, tables: Sequence[Any]) -> None:
        """Create our tables if missing (never drops anything).

        Processes starting together race on CREATE TABLE; the loser sees "already exists" and simply retries,
        and the retry's existence check then finds the winner's tables.
        """
        for attempt in range(5):
            try:
                SQLModel.metadata.create_all(self.engine, tables=[t.__table__ for t in tables])
                return
            except DatabaseError:
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def sql(self, statement: str) -> str:
        """Statements are written with ``?`` placeholders; psycopg2 wants ``%s``."""
        return statement if self.backend == "sqlite" else statement.replace("?", "%s")

    def _connection(self) -> Any:
        if self._raw is None:
            raw = self.engine.raw_connection()
            conn: Any = raw.driver_connection
            if self.backend == "sqlite":
                conn.isolation_level = None  # we issue BEGIN IMMEDIATE ourselves
                database = make_url(self.url).database
                if database not in (None, "", ":memory:"):
                    conn.execute("PRAGMA wal_autocheckpoint=0")
                    self._checkpointer = _Checkpointer(self.engine)
            self._raw = raw
        return self._raw.driver_connection

    @contextmanager
    def write(self, lock_key: str) -> Iterator[Any]:
        """A serialised write transaction; ``lock_key`` scopes the PostgreSQL advisory lock."""
        with self._lock:
            conn = self._connection()
            cur = conn.cursor()
            try:
                if self.backend == "sqlite":
                    cur.execute("BEGIN IMMEDIATE")
                else:
                    cur.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_id(lock_key),))
                yield cur
                if self.backend == "sqlite":
                    cur.execute("COMMIT")
                    if self._checkpointer is not None and self._checkpointer.failed:
                        cur.execute("PRAGMA wal_autocheckpoint=1000")
                        self._checkpointer = None
                else:
                    conn.commit()
            except BaseException:
                if self.backend == "sqlite":
                    if conn.in_transaction:
                        cur.execute("ROLLBACK")
                else:
                    conn.rollback()
                raise
            finally:
                cur.close()

    @contextmanager
    def read(self) -> Iterator[Any]:
        """A read-only cursor on the shared connection (consistent snapshot for its duration)."""
        with self._lock:
            conn = self._connection()
            cur = conn.cursor()
            try:
                yield cur
            finally:
                cur.close()
                if self.backend != "sqlite":
                    conn.rollback()

    def close(self) -> None:
        with self._lock:
            if self._checkpointer is not None:
                self._checkpointer.stop()
                self._checkpointer = None
            if self._raw is not None:
                self._raw.close()
                self._raw = None
            self.engine.dispose()


class _Checkpointer:
    """Copies the SQLite WAL into the database every ``interval_s`` on its own connection (PASSIVE: never blocks
    writers). Other processes sharing the file keep SQLite's automatic checkpoints, so the WAL stays bounded."""

    def __init__(self, engine: Engine, interval_s: float = 0.25) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.failed = False
        self._thread = threading.Thread(target=self._run, name="agentcore-wal-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        raw = self._engine.raw_connection()
        try:
            while not self._stop.wait(self._interval_s):
                raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)")  # type: ignore[union-attr]
        except Exception as error:  # the writer sees `failed` and turns SQLite's automatic checkpoints back on
            log.warning("background WAL checkpoints stopped: %s", error)
            self.failed = True
        finally:
            raw.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _lock_id(key: str) -> int:
    """Advisory locks take a signed 64-bit key."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big", signed=True)
