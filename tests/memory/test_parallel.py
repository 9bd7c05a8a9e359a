"""With pgvector, a large actor's hybrid query ranks its full text on a second connection while the first nominates."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, event

from agentcore.memory import MemoryStore, NewRecord

pytestmark = pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)


@pytest.fixture
def statements() -> Iterator[list[tuple[str, str]]]:
    """(thread name, "fulltext" or "nominate") of each statement any engine sends while the test runs."""
    seen: list[tuple[str, str]] = []

    def record(_conn: object, _cursor: object, statement: str, *_: Any) -> None:
        nominates = "<=>" in statement and "LIMIT" in statement  # reads by id compute distances too, unlimited
        kind = "fulltext" if "ts_rank(" in statement else "nominate" if nominates else None
        if kind is not None:
            seen.append((threading.current_thread().name, kind))

    event.listen(Engine, "before_cursor_execute", record)
    yield seen
    event.remove(Engine, "before_cursor_execute", record)


def test_the_full_text_ranks_beside_the_nomination_with_the_same_results(
    make_store: Callable[..., MemoryStore], statements: list[tuple[str, str]]
) -> None:
    store = make_store()
    if not store.pgvector:
        pytest.skip("pgvector is not installed on the test server")
    rng = np.random.default_rng(3)
    texts = [f"note {i % 7} about apples" if i % 3 else f"note {i} about pears" for i in range(300)]
    store.add_records(
        "alice", [NewRecord(namespace="/n", text=t) for t in texts], embeddings=rng.normal(size=(300, 384))
    )
    store.add_records("bob", [NewRecord(namespace="/n", text="apples of bob")], embeddings=rng.normal(size=(1, 384)))
    query = rng.normal(size=384).astype(np.float32)
    first = store.retrieve("alice", "apples pears", query_embedding=query)
    assert {name for name, _ in statements} == {"MainThread"}  # not yet known to be large
    statements.clear()
    parallel = store.retrieve("alice", "apples pears", query_embedding=query)
    assert sorted(kind for _, kind in statements) == ["fulltext", "nominate"]
    threads = {kind: name for name, kind in statements}
    assert threads["fulltext"].startswith("agentcore-memory-side") and threads["nominate"] == "MainThread"
    assert [(h.record.id, h.score, h.similarity) for h in first] == [
        (h.record.id, h.score, h.similarity) for h in parallel
    ]
    assert parallel and all(hit.record.actor_id == "alice" for hit in parallel)
    statements.clear()
    for _ in range(2):  # an actor with fewer rows than a fused ranking reads stays on one connection
        assert [hit.record.actor_id for hit in store.retrieve("bob", "apples", query_embedding=query)] == ["bob"]
    assert {name for name, _ in statements} == {"MainThread"}
