"""AsyncMemoryStore: concurrent awaits from one event loop, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcore.memory import AsyncMemoryStore, InvalidMemoryInputError, MemoryStore


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
def test_concurrent_awaits_store_and_find_everything(make_store: Callable[..., MemoryStore]) -> None:
    memory = AsyncMemoryStore(store=make_store())

    async def scenario() -> None:
        writes = [
            memory.add_event(f"actor-{i % 4}", "s1", "user", f"turn {i}: my cello is named zebracorn{i % 4}")
            for i in range(40)
        ]
        events = await asyncio.gather(*writes)
        assert len({event.id for event in events}) == 40
        searches = await asyncio.gather(*(memory.search_events(f"actor-{a}", "cello zebracorn") for a in range(4)))
        for actor, hits in enumerate(searches):
            assert hits and all(hit.event.actor_id == f"actor-{actor}" for hit in hits)
            assert all(f"zebracorn{actor}" in hit.event.text for hit in hits)
        record = await memory.add_record("actor-0", "/users/actor-0/facts", "the cello is from Cremona")
        assert (await memory.get_record("actor-0", record.id)).text == "the cello is from Cremona"
        with pytest.raises(InvalidMemoryInputError, match="top_k"):
            await memory.retrieve("actor-0", "cello", top_k=0)
        assert (await memory.stats()).events == 40
        assert (await memory.forget("actor-0")).events == 10

    asyncio.run(scenario())


def test_a_blocked_call_leaves_the_event_loop_running(tmp_path: Path, accelerator: object) -> None:
    """A write waiting on another connection's lock must not freeze the loop (it runs in a thread)."""
    path = tmp_path / "m.db"
    memory = AsyncMemoryStore(f"sqlite:///{path}", accelerator=accelerator)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")

    async def scenario() -> None:
        write = asyncio.create_task(memory.add_event("alice", "s1", "user", "hello"))
        for _ in range(10):
            await asyncio.sleep(0.02)  # would not run before the write finished if the write blocked the loop
        assert not write.done()
        blocker.execute("COMMIT")
        assert (await write).text == "hello"
        assert [event.text for event in await memory.list_events("alice", "s1")] == ["hello"]
        await memory.close()

    asyncio.run(scenario())
    blocker.close()


def test_an_in_memory_database_serialises_its_calls(accelerator: object) -> None:
    async def scenario() -> None:
        memory = AsyncMemoryStore("sqlite://", accelerator=accelerator)
        assert memory._serial is not None
        await asyncio.gather(*(memory.add_event("alice", "s1", "user", f"note {i}") for i in range(20)))
        assert len(await memory.list_events("alice", "s1")) == 20
        await memory.close()

    asyncio.run(scenario())
