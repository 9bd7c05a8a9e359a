"""A second PostgreSQL backend for one part of a query, so that two statements of a search run at once.

A heavy actor's hybrid query spends most of its server time in two independent statements: the capped
full-text ranking and the HNSW nomination (docs/memory.md). Sent on two connections they run in two backends
at once. The second connection comes from a pool of its own: a search holds its main connection while it waits
for the other statement, so both drawing on one pool could leave every connection held by a waiting search.
Each statement keeps the actor's conditions: isolation never depends on which connection ran it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import Connection

T = TypeVar("T")
WORKERS = 4  # statements sent at once beside their searches; more searches queue for a worker


class SideConnections:
    """Runs ``work(connection)`` in a worker thread on a connection of a separate pool of ``engine``'s kind."""

    def __init__(self, engine: Engine) -> None:
        # recreate(): a new pool with the same connect function (URL, connect_args) and settings, pre-ping included
        self._engine = create_engine(engine.url, pool=engine.pool.recreate())
        self._workers = ThreadPoolExecutor(WORKERS, thread_name_prefix="agentcore-memory-side")

    def submit(self, work: Callable[[Connection], T]) -> Future[T]:
        return self._workers.submit(self._run, work)

    def _run(self, work: Callable[[Connection], T]) -> T:
        with self._engine.connect() as connection:
            return work(connection)

    def close(self) -> None:
        self._workers.shutdown(wait=True)
        self._engine.dispose()
