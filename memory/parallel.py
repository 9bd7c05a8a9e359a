"""A second PostgreSQL backend for one part of a query, so that two statements of a search run at once.

A heavy actor's hybrid query spends most of its server time in two independent statements: the capped
full-text ranking and the HNSW nomination (docs/memory.md). Sent on two connections they run in two backends
at once. The second connection comes from a pool of its own: a search holds its main connection while it waits
for the other statement, so both drawing on one pool could leave every connection held by a waiting search.
Each statement keeps the actor's conditions: isolation never depends on which connection ran it.

Only a large actor's query is split: for an actor with a few hundred rows both statements take well under a
millisecond, and the hand-over to a thread and the second checkout cost more client CPU than the overlap saves.
Which actors are large is learnt from their previous queries (:meth:`SideConnections.remember`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import Connection

T = TypeVar("T")
WORKERS = 4  # statements sent at once beside their searches; more searches queue for a worker
REMEMBERED = 4096  # large actors remembered, least recently queried forgotten first


class SideConnections:
    """Runs ``work(connection)`` in a worker thread on a connection of a separate pool of ``engine``'s kind."""

    def __init__(self, engine: Engine) -> None:
        # recreate(): a new pool with the same connect function (URL, connect_args) and settings, pre-ping included
        self._engine = create_engine(engine.url, pool=engine.pool.recreate())
        self._workers = ThreadPoolExecutor(WORKERS, thread_name_prefix="agentcore-memory-side")
        self._large: OrderedDict[tuple[str, str, str], None] = OrderedDict()  # (table, tenant, actor)
        self._lock = threading.Lock()

    def worth_it(self, key: tuple[str, str, str]) -> bool:
        """Whether ``key`` (a table, tenant and actor) was large when last queried."""
        return key in self._large

    def remember(self, key: tuple[str, str, str], *, large: bool) -> None:
        with self._lock:
            if not large:
                self._large.pop(key, None)
                return
            self._large[key] = None
            self._large.move_to_end(key)
            if len(self._large) > REMEMBERED:
                self._large.popitem(last=False)

    def forget(self, tenant: str | None, actor_id: str) -> None:
        """Remember nothing of ``actor_id`` in ``tenant`` (``None``: every tenant): ``forget`` leaves no trace."""
        with self._lock:
            for key in [key for key in self._large if key[2] == actor_id and tenant in (None, key[1])]:
                del self._large[key]

    def submit(self, work: Callable[[Connection], T]) -> Future[T]:
        return self._workers.submit(self._run, work)

    def _run(self, work: Callable[[Connection], T]) -> T:
        with self._engine.connect() as connection:
            return work(connection)

    def close(self) -> None:
        self._workers.shutdown(wait=True)
        self._engine.dispose()
