"""One database handle for the gateway's tables: SQLAlchemy engine for schema, a raw DBAPI connection for speed.

Audit appends and rate-limit reservations must be serialised across processes and must be cheap (tens of µs),
so they run as short explicit write transactions on one raw connection: ``BEGIN IMMEDIATE`` on SQLite (after a
blocking file lock that queues the writers of every process in the kernel, see :mod:`.writer_lock`), a
transaction-scoped advisory lock on PostgreSQL. Durability is a setting: ``"process"`` (default) survives a
crash of the process (SQLite WAL, synchronous=NORMAL); ``"power"`` fsyncs every commit (synchronous=FULL).
WAL checkpoints (which fsync) run on a background thread instead of inside a caller's commit, so they do not
show up as multi-millisecond tail latencies on the call path. Under traffic that never pauses, those passive
checkpoints never catch up and the WAL would grow without end; past ``WAL_RESTART_PAGES`` the thread briefly holds
the writers back to checkpoint everything and let the WAL start over.
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

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError
from sqlmodel import SQLModel

from agentcore.config import as_url, database_url
from agentcore.errors import ConfigError
from agentcore.gateway.writer_lock import WriterLock

log = logging.getLogger(__name__)
Durability = Literal["process", "power"]
WAL_RESTART_PAGES = 4096  # 16 MiB of 4 KiB pages: a full checkpoint this size takes milliseconds, rarely


def resolve_url(url: str | None, *, create_folder: bool = True) -> str:
    """``None`` means the discovered database (:func:`agentcore.config.database_url`); a bare path a SQLite file."""
    url = database_url() if url is None else as_url(url, Path.cwd())
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
                cur.execute(f"PRAGMA journal_size_limit={WAL_RESTART_PAGES * 4096}")  # a restarted WAL is cut back
                cur.execute("PRAGMA secure_delete=ON")  # deleted bytes are zeroed: erasure leaves nothing in the file
                cur.close()

        self.lock = threading.RLock()  # serialises every use of the one connection; hold it across several writes
        self._raw: Any = None
        self._cursor: Any = None
        self._checkpointer: _Checkpointer | None = None
        database = make_url(self.url).database if self.backend == "sqlite" else None
        on_disk = database not in (None, "", ":memory:")
        self.writers: WriterLock | None = WriterLock(f"{database}-writer.lock") if on_disk else None

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
                    self._checkpointer = _Checkpointer(self.engine, self.lock, self.writers)
            self._raw = raw
        return self._raw.driver_connection

    def write(self, *lock_keys: str) -> _WriteTransaction:
        """``with db.write(key, ...) as cursor``: a serialised write transaction; on PostgreSQL it holds an
        advisory lock per key (taken in one global order). Commits on success, rolls back on any exception."""
        return _WriteTransaction(self, lock_keys)

    def execute_alone(self, statement: str, params: Sequence[Any]) -> None:
        """One statement as its own transaction: the cheapest durable write (on SQLite, one autocommit step)."""
        with self.lock:
            cursor = self._writer()
            if self.writers is not None:
                self.writers.acquire()
            try:
                cursor.execute(statement, params)
                if self.backend != "sqlite":
                    self._raw.driver_connection.commit()
            except BaseException:
                self._rollback()  # releases the writer lock too
                raise
            self._release_writers()
            self._restore_autocheckpoint_if_needed()

    @contextmanager
    def held_without_waiting(self) -> Iterator[bool]:
        """Hold this connection and the writer lock if both are free now (True; else False, nothing held): the
        holder's writes then never wait for another thread or process of ours."""
        if not self.lock.acquire(blocking=False):
            yield False
            return
        try:
            if self.writers is not None and not self.writers.try_acquire():
                yield False
                return
            try:
                yield True
            finally:
                if self.writers is not None:
                    self.writers.release()
        finally:
            self.lock.release()

    def _writer(self) -> Any:
        if self._cursor is None:
            self._cursor = self._connection().cursor()  # one cursor for every write: the lock serialises them
        return self._cursor

    def _begin(self, lock_keys: tuple[str, ...]) -> Any:
        cursor = self._writer()
        if self.backend == "sqlite":
            if self.writers is not None:
                self.writers.acquire()  # released by _commit or _rollback
            try:
                cursor.execute("BEGIN IMMEDIATE")
            except BaseException:
                self._release_writers()
                raise
        else:
            for lock_id in sorted({_lock_id(key) for key in lock_keys}):
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id,))
        return cursor

    def _commit(self) -> None:
        if self.backend != "sqlite":
            self._raw.driver_connection.commit()
            return
        self._cursor.execute("COMMIT")  # a failed COMMIT leaves the transaction open: _rollback releases
        self._release_writers()
        self._restore_autocheckpoint_if_needed()

    def _release_writers(self) -> None:
        if self.writers is not None:
            self.writers.release()

    def _restore_autocheckpoint_if_needed(self) -> None:
        """If the background checkpointer died, SQLite's own checkpoints keep the WAL bounded again."""
        if self._checkpointer is not None and self._checkpointer.failed:
            self._cursor.execute("PRAGMA wal_autocheckpoint=1000")
            self._checkpointer = None

    def _rollback(self) -> None:
        conn = self._raw.driver_connection
        if self.backend != "sqlite":
            conn.rollback()
            return
        try:
            if conn.in_transaction:
                self._cursor.execute("ROLLBACK")
        finally:
            self._release_writers()

    @contextmanager
    def read(self) -> Iterator[Any]:
        """A read-only cursor on the shared connection (consistent snapshot for its duration)."""
        with self.lock:
            conn = self._connection()
            cur = conn.cursor()
            try:
                yield cur
            finally:
                cur.close()
                if self.backend != "sqlite":
                    conn.rollback()

    def truncate_wal(self, attempts: int = 20) -> bool:
        """Copy the whole WAL into the database and truncate it to zero bytes (retrying while readers block it);
        returns whether it succeeded."""
        with self.lock:
            cursor = self._writer()
            for _ in range(attempts):
                if cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
                    return True
                time.sleep(0.05)
        return False

    def leave_no_copies(self, tables: Sequence[str]) -> None:
        """After deleting personal rows of ``tables``: SQLite (which zeroes freed bytes, ``secure_delete``) copies
        the WAL into the file and truncates it, so no deleted page stays in ``-wal``; PostgreSQL vacuums those of
        the tables that exist, so their dead row versions go."""
        if self.backend == "sqlite":
            if not self.truncate_wal():
                log.warning("WAL checkpoint was blocked by a reader; deleted rows stay in the WAL until the next one")
            return
        present = [table for table in tables if inspect(self.engine).has_table(table)]
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for table in present:
                conn.execute(text(f"VACUUM {table}"))

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A cursor whose reads all see one snapshot, however long they take and whoever commits meanwhile:
        one SQLite read transaction, or one PostgreSQL REPEATABLE READ transaction."""
        with self.lock:
            conn = self._connection()
            cur = conn.cursor()
            try:
                if self.backend == "sqlite":
                    cur.execute("BEGIN")
                    cur.execute("SELECT 1 FROM sqlite_master LIMIT 1")  # a deferred BEGIN takes its snapshot here
                else:
                    conn.rollback()
                    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield cur
            finally:
                cur.close()
                if self.backend == "sqlite":
                    if conn.in_transaction:
                        conn.execute("COMMIT")
                else:
                    conn.rollback()

    def close(self) -> None:
        with self.lock:
            if self._checkpointer is not None:
                self._checkpointer.stop()
                self._checkpointer = None
            if self._raw is not None:
                self._raw.close()
                self._raw = self._cursor = None
            if self.writers is not None:
                self.writers.close()
            self.engine.dispose()


class _WriteTransaction:
    """The context manager behind :meth:`Database.write`: a class rather than a generator because gateway calls go
    through it (state sections and locked audit appends), and a generator-based one costs
    several microseconds more each time."""

    __slots__ = ("db", "lock_keys")

    def __init__(self, db: Database, lock_keys: tuple[str, ...]) -> None:
        self.db = db
        self.lock_keys = lock_keys

    def __enter__(self) -> Any:
        self.db.lock.acquire()
        try:
            return self.db._begin(self.lock_keys)
        except BaseException:
            self._abort()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc_type is not None:
            self._abort()
            return
        try:
            self.db._commit()
        except BaseException:
            self._abort()
            raise
        self.db.lock.release()

    def _abort(self) -> None:
        try:
            if self.db._raw is not None:
                self.db._rollback()
        finally:
            self.db.lock.release()


class _Checkpointer:
    """Copies the SQLite WAL into the database every ``interval_s`` on its own connection (PASSIVE: never blocks
    writers); past ``WAL_RESTART_PAGES`` one RESTART checkpoint lets the WAL start over. Every process sharing the
    file runs its own."""

    def __init__(
        self, engine: Engine, writers: threading.RLock, others: WriterLock | None, interval_s: float = 0.25
    ) -> None:
        self._engine = engine
        self._writers = writers
        self._others = others
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.failed = False
        self._thread = threading.Thread(target=self._run, name="agentcore-wal-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        raw = self._engine.raw_connection()
        conn: Any = raw.driver_connection
        try:
            while not self._stop.wait(self._interval_s):
                _busy, wal_pages, _copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if wal_pages > WAL_RESTART_PAGES:  # writes never paused long enough for the WAL to start over
                    with self._writers:  # this process's writers wait, and other processes' on the writer lock
                        self._restart(conn)
        except Exception as error:  # the writer sees `failed` and turns SQLite's automatic checkpoints back on
            log.warning("background WAL checkpoints stopped: %s", error)
            self.failed = True
        finally:
            raw.close()

    def _restart(self, conn: Any) -> None:
        if self._others is not None:
            self._others.acquire()
        try:
            conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        finally:
            if self._others is not None:
                self._others.release()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _lock_id(key: str) -> int:
    """Advisory locks take a signed 64-bit key."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big", signed=True)
