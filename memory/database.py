"""Engines for the memory store: SQLite tuned for many writers and crash safety, or any SQLAlchemy URL.

SQLite runs in WAL mode with ``synchronous=FULL`` (an acknowledged write survives a killed process and a
power cut), ``secure_delete`` (deleted bytes are zeroed, so ``forget`` leaves nothing in the file) and a
busy timeout. Write transactions start with ``BEGIN IMMEDIATE`` so two writers queue on the lock instead
of failing on a read-to-write upgrade, and :func:`run_write` retries the rare lock error that remains.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlalchemy.pool import StaticPool

from agentcore.memory.errors import MemoryStoreError

log = logging.getLogger(__name__)

T = TypeVar("T")
BUSY_TIMEOUT_S = 30.0
WRITE_ATTEMPTS = 12
_WRITE_OPTION = "agentcore_memory_write"
_RETRYABLE_PG_CODES = frozenset({"40001", "40P01", "55P03"})  # serialization failure, deadlock, lock not available


def utcnow() -> datetime:
    return datetime.now(UTC)


def create_memory_engine(url: str, *, synchronous: str = "FULL") -> Engine:
    """An engine for ``url``; SQLite gets WAL, busy timeout, secure delete and IMMEDIATE write transactions."""
    try:
        parsed = make_url(url)
        if parsed.get_backend_name() != "sqlite":
            return create_engine(url, pool_pre_ping=True)
    except ArgumentError as error:  # also an unknown dialect (NoSuchModuleError)
        raise MemoryStoreError(f"{url!r} is not a database URL (e.g. sqlite:///memory.db): {error}") from error
    if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise MemoryStoreError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}")
    in_memory = parsed.database in (None, "", ":memory:")
    if not in_memory:
        Path(str(parsed.database)).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
        poolclass=StaticPool if in_memory else None,
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (below)
        cursor = dbapi_connection.cursor()
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(_WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _retryable(error: DBAPIError) -> bool:
    code = getattr(error.orig, "pgcode", None)
    if code in _RETRYABLE_PG_CODES:
        return True
    message = str(error.orig).lower()
    return isinstance(error, OperationalError) and ("locked" in message or "busy" in message)


def run_write(engine: Engine, work: Callable[[Connection], T]) -> T:
    """Run ``work`` in one write transaction, retrying lock contention with jittered backoff."""
    writer = engine.execution_options(**{_WRITE_OPTION: True})
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            with writer.begin() as connection:
                return work(connection)
        except DBAPIError as error:
            if not _retryable(error) or attempt == WRITE_ATTEMPTS:
                raise
            delay = min(1.0, 0.01 * 2**attempt) * (0.5 + random.random())
            log.info("database busy (attempt %d/%d), retrying in %.3fs: %s", attempt, WRITE_ATTEMPTS, delay, error.orig)
            time.sleep(delay)
    raise AssertionError("unreachable")  # the loop returns or raises
