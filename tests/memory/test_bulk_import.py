"""Bulk import: pgvector's HNSW indexes are dropped for the load and built once after it; search stays exact."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event, text

from agentcore.memory import MemoryStore, NewRecord
from agentcore.memory.pgvector import vector_literal
from agentcore.memory.search import RANK_DEPTH

FACTS = "/users/alice/facts"


def _vectors(rows: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, 384))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _fill(store: MemoryStore, vectors: np.ndarray) -> list[int]:
    records = [NewRecord(namespace=FACTS, text=f"note {i} about topic {i % 7}") for i in range(len(vectors))]
    return store.add_records("alice", records, embeddings=vectors)


def _exact(ids: list[int], vectors: np.ndarray, query: np.ndarray) -> list[int]:
    return [ids[i] for i in np.argsort(-(vectors @ query), kind="stable")[:10]]


def _hnsw_indexes(store: MemoryStore) -> set[str]:
    with store.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexdef LIKE '%hnsw%'")
        )
        return set(rows.scalars())


HNSW = {"ix_memory_records_embedding_vec", "ix_memory_events_embedding_vec"}


def test_the_vector_literal_holds_the_float32_embedding_exactly() -> None:
    vector = _vectors(1, seed=1)[0]
    parsed = np.array(vector_literal(vector.astype("<f4").tobytes())[1:-1].split(","), dtype=np.float32)
    assert np.array_equal(parsed, vector)


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_bulk_import_builds_the_hnsw_indexes_after_the_load(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    assert store.pgvector and _hnsw_indexes(store) == HNSW
    vectors, query = _vectors(300, seed=2), _vectors(1, seed=3)[0]
    with store.bulk_import() as importing:
        assert importing is store and _hnsw_indexes(store) == set()  # no graph maintenance per inserted row
        ids = _fill(store, vectors)
        during = store.retrieve("alice", "note", mode="vector", query_embedding=query)
        assert [hit.record.id for hit in during] == _exact(ids, vectors, query)  # exact without the index
    assert _hnsw_indexes(store) == HNSW
    after = store.retrieve("alice", "note", mode="vector", query_embedding=query)
    assert [hit.record.id for hit in after] == _exact(ids, vectors, query)
    with store.engine.connect() as connection:  # analyze() ran: the planner knows the row count
        counted = connection.execute(text("SELECT reltuples FROM pg_class WHERE oid = 'memory_records'::regclass"))
        assert counted.scalar() == 300


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_bulk_import_builds_the_indexes_when_the_load_fails(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    with pytest.raises(RuntimeError, match="import failed"), store.bulk_import():
        _fill(store, _vectors(20, seed=4))
        raise RuntimeError("import failed")
    assert _hnsw_indexes(store) == HNSW


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_a_store_opened_after_an_unfinished_import_builds_the_missing_index(
    make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store()
    with store.engine.begin() as connection:  # what a process killed inside bulk_import() leaves behind
        connection.execute(text("DROP INDEX ix_memory_records_embedding_vec"))
    assert _hnsw_indexes(store) == {"ix_memory_events_embedding_vec"}
    reopened = MemoryStore(engine=store.engine, accelerator=store.accelerator)
    assert reopened.pgvector and _hnsw_indexes(reopened) == HNSW


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
def test_bulk_import_without_pgvector_only_analyzes(
    make_store: Callable[..., MemoryStore], request: pytest.FixtureRequest
) -> None:
    postgresql = request.node.callspec.params["make_store"] == "postgresql"
    store = make_store(pgvector=False) if postgresql else make_store()
    vectors, query = _vectors(50, seed=5), _vectors(1, seed=6)[0]
    with store.bulk_import():
        ids = _fill(store, vectors)
    hits = store.retrieve("alice", "note", mode="vector", query_embedding=query)
    assert [hit.record.id for hit in hits] == _exact(ids, vectors, query)
    if postgresql:  # analyze() ran: the planner knows the row count
        with store.engine.connect() as connection:
            counted = connection.execute(text("SELECT reltuples FROM pg_class WHERE oid = 'memory_records'::regclass"))
            assert counted.scalar() == 50


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_pgvector_nominates_the_rows_a_fused_ranking_reads(make_store: Callable[..., MemoryStore]) -> None:
    """Nominees are in scope, so a hybrid query asks HNSW for the RANK_DEPTH rows its vector ranking reads, a plain
    vector query for twice ``top_k`` (the margin keeps recall@10); each read with its embedding in one statement.
    Fewer nominees than asked for (this light actor's hybrid query) prove nothing, so every row in scope is read."""
    store = make_store()
    vectors, query = _vectors(150, seed=7), _vectors(1, seed=8)[0]
    _fill(store, vectors)
    limits: list[tuple[str, object]] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def _seen(_conn: object, _cursor: object, statement: str, parameters: Any, *_: object) -> None:
        if "<=>" in statement:
            assert "memory_records.embedding" in statement  # the nominees come with their embeddings
            limits.append(("nominate", parameters["limit"]) if "limit" in parameters else ("every row", None))
        elif "memory_records.embedding" in statement and "memory_records.text" not in statement:
            limits.append(("read again", None))

    store.retrieve("alice", "note topic", query_embedding=query)
    store.retrieve("alice", "note", mode="vector", query_embedding=query)
    assert limits == [("nominate", RANK_DEPTH), ("every row", None), ("nominate", 20)]
