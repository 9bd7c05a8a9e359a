"""AsyncMemoryStore: the MemoryStore API for asyncio agent frameworks, without blocking their event loop.

Each call runs the synchronous store method in a worker thread (the SQL drivers and the encoder are
blocking), so the loop keeps serving other tasks while a query or an embedding runs. A call is durable
once its ``await`` returns, exactly like the synchronous method; a task cancelled while waiting may still
see its write complete in the thread. An in-memory SQLite database has one shared connection, so its
calls run one at a time; file databases and PostgreSQL run concurrently through the engine's pool.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from agentcore.memory.store import MemoryStore

P = ParamSpec("P")
T = TypeVar("T")


def _in_thread(
    method: Callable[Concatenate[MemoryStore, P], T],
) -> Callable[Concatenate[AsyncMemoryStore, P], Coroutine[Any, Any, T]]:
    """An async method running ``MemoryStore.<method>`` on the wrapped store in a worker thread."""

    @functools.wraps(method)
    async def call(self: AsyncMemoryStore, *args: P.args, **kwargs: P.kwargs) -> T:
        bound = functools.partial(method, self.store, *args, **kwargs)
        if self._serial is None:
            return await asyncio.to_thread(bound)
        async with self._serial:
            return await asyncio.to_thread(bound)

    return call


class AsyncMemoryStore:
    """``await``-able twin of :class:`MemoryStore`: same arguments, same results, same errors.

    Build it like a MemoryStore (``AsyncMemoryStore("sqlite:///memory.db")``) or wrap one
    (``AsyncMemoryStore(store=existing)``); ``store`` stays usable synchronously.
    """

    def __init__(self, url: str | None = None, *, store: MemoryStore | None = None, **options: Any) -> None:
        self.store = store if store is not None else MemoryStore(url, **options)
        database = self.store.engine.url.database
        shared = self.store.engine.dialect.name == "sqlite" and database in (None, "", ":memory:")
        self._serial = asyncio.Lock() if shared else None

    async def close(self) -> None:
        await asyncio.to_thread(self.store.close)

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    embed = _in_thread(MemoryStore.embed)
    add_event = _in_thread(MemoryStore.add_event)
    add_events = _in_thread(MemoryStore.add_events)
    add_events_bulk = _in_thread(MemoryStore.add_events_bulk)
    get_event = _in_thread(MemoryStore.get_event)
    list_events = _in_thread(MemoryStore.list_events)
    last_turns = _in_thread(MemoryStore.last_turns)
    list_sessions = _in_thread(MemoryStore.list_sessions)
    index_events = _in_thread(MemoryStore.index_events)
    search_events = _in_thread(MemoryStore.search_events)
    add_record = _in_thread(MemoryStore.add_record)
    add_records = _in_thread(MemoryStore.add_records)
    get_record = _in_thread(MemoryStore.get_record)
    list_records = _in_thread(MemoryStore.list_records)
    update_record = _in_thread(MemoryStore.update_record)
    supersede_record = _in_thread(MemoryStore.supersede_record)
    record_history = _in_thread(MemoryStore.record_history)
    delete_record = _in_thread(MemoryStore.delete_record)
    retrieve = _in_thread(MemoryStore.retrieve)
    extract = _in_thread(MemoryStore.extract)
    forget = _in_thread(MemoryStore.forget)
    purge = _in_thread(MemoryStore.purge)
    stats = _in_thread(MemoryStore.stats)
