"""Vector search for actors with many rows: nominations (SQLite cache, pgvector HNSW) and exact re-ranking."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import URL, create_engine, event, make_url, text

from agentcore.memory import InvalidMemoryInputError, MemoryStore, MemoryStoreError, NewRecord
from agentcore.memory.vectors import CACHE_MIN_ROWS, PROJECTED_DIMENSIONS, ActorMatrixCache

HEAVY = CACHE_MIN_ROWS + 1000
FACTS = "/users/heavy/facts"


def _clustered(rows: int, seed: int = 3) -> np.ndarray:
    """Unit vectors around 40 centres, like real embeddings (random uniform ones have no near neighbours)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, 384))
    vectors = centres[rng.integers(0, 40, rows)] + 0.4 * rng.normal(size=(rows, 384))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _fill(store: MemoryStore, actor: str, vectors: np.ndarray, namespace: str = FACTS) -> list[int]:
    records = [NewRecord(namespace=namespace, text=f"note {i} about topic {i % 40}") for i in range(len(vectors))]
    return store.add_records(actor, records, embeddings=vectors)


def _exact(ids: list[int], vectors: np.ndarray, query: np.ndarray, k: int = 10) -> list[int]:
    return [ids[i] for i in np.argsort(-(vectors @ query), kind="stable")[:k]]


@contextmanager
def _database_and_role(admin_url: str, *, role_owns_it: bool) -> Iterator[tuple[URL, str]]:
    """A throwaway database (the URL, as the admin) and login role on the test server, dropped after the test; the
    database is the role's when ``role_owns_it``, else the admin's."""
    url = make_url(admin_url)
    role, database = f"memrole_{uuid.uuid4().hex[:10]}", f"memdb_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE ROLE {role} LOGIN"))
        connection.execute(text(f"CREATE DATABASE {database}" + (f" OWNER {role}" if role_owns_it else "")))
    try:
        yield url.set(database=database), role
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
            connection.execute(text(f"DROP ROLE IF EXISTS {role}"))
        admin.dispose()


def _searches_exactly(store: MemoryStore, seed: int) -> None:
    """A vector search over a fresh actor's rows returns the exact nearest ten."""
    vectors = _clustered(100)
    ids = _fill(store, "alice", vectors)
    query = _clustered(1, seed=seed)[0]
    hits = store.retrieve("alice", "note", mode="vector", query_embedding=query)
    assert [hit.record.id for hit in hits] == _exact(ids, vectors, query)


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
def test_a_heavy_actor_gets_the_exact_nearest_records(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    vectors = _clustered(HEAVY)
    ids = _fill(store, "heavy", vectors)
    _fill(store, "light", _clustered(50, seed=9))
    queries = _clustered(20, seed=11)
    recalls = []
    for query in queries:
        hits = store.retrieve("heavy", "note", mode="vector", query_embedding=query, top_k=10)
        assert all(hit.record.actor_id == "heavy" for hit in hits)
        recalls.append(len({hit.record.id for hit in hits} & set(_exact(ids, vectors, query))) / 10)
        hybrid = store.retrieve("heavy", "note topic 7", query_embedding=query, top_k=10)
        assert len(hybrid) == 10 and all(hit.record.actor_id == "heavy" for hit in hybrid)
    if store.engine.dialect.name == "sqlite":
        assert (
            isinstance(store._nominator, ActorMatrixCache)
            and ("memory_records", "default", "heavy") in store._nominator
        )
        assert recalls == [1.0] * len(queries)  # the cached matrix is scored exactly
    else:
        assert store.pgvector, "the test database has pgvector (scripts/start-services.sh builds it)"
        assert np.mean(recalls) >= 0.99  # HNSW nominates, the float32 embeddings re-rank


def test_projected_nominations_re_ranked_exactly_find_the_nearest_records(store: MemoryStore) -> None:
    """Past PROJECT_MIN_ROWS the cache scores a 64-d projection first; the exact re-rank keeps recall."""
    store._nominator = cache = ActorMatrixCache(project_min_rows=CACHE_MIN_ROWS)
    vectors = _clustered(HEAVY)
    ids = _fill(store, "heavy", vectors)
    recalls = []
    for query in _clustered(20, seed=11):
        hits = store.retrieve("heavy", "note", mode="vector", query_embedding=query, top_k=10)
        recalls.append(len({hit.record.id for hit in hits} & set(_exact(ids, vectors, query))) / 10)
        assert [hit.similarity for hit in hits] == sorted((hit.similarity for hit in hits), reverse=True)
    matrix = cache._matrices[("memory_records", "default", "heavy")]
    assert matrix.projected is not None and matrix.projected.shape == (HEAVY, PROJECTED_DIMENSIONS)
    assert np.mean(recalls) >= 0.99


def test_the_cache_sees_writes_from_another_connection(tmp_path: Path, accelerator: object) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    reader, writer = MemoryStore(url, accelerator=accelerator), MemoryStore(url, accelerator=accelerator)  # type: ignore[arg-type]
    vectors = _clustered(HEAVY)
    _fill(writer, "heavy", vectors)
    query = _clustered(1, seed=5)[0]
    before = reader.retrieve("heavy", "note", mode="vector", query_embedding=query)
    assert ("memory_records", "default", "heavy") in reader._nominator  # type: ignore[operator]
    added = writer.add_records("heavy", [NewRecord(namespace=FACTS, text="the newest note")], embeddings=query[None])
    assert reader.retrieve("heavy", "note", mode="vector", query_embedding=query)[0].record.id == added[0]
    writer.delete_record("heavy", added[0])
    after_delete = reader.retrieve("heavy", "note", mode="vector", query_embedding=query)
    assert [hit.record.id for hit in after_delete] == [hit.record.id for hit in before]
    changed = before[-1].record.id
    writer.update_record("heavy", changed, text="the violin teacher lives in Vienna")
    moved = writer.embed("heavy", ["the violin teacher lives in Vienna"])[0]
    assert reader.retrieve("heavy", "x", mode="vector", query_embedding=moved)[0].record.id == changed
    writer.close()
    reader.close()


def test_nominations_outside_the_scope_fall_back_to_every_row_in_scope(store: MemoryStore) -> None:
    wide, narrow = _clustered(HEAVY), _clustered(300, seed=4)
    _fill(store, "heavy", wide)
    narrow_ids = _fill(store, "heavy", narrow, namespace="/users/heavy/rare")
    expiring = store.add_record("heavy", "/users/heavy/rare", "soon gone", ttl=timedelta(microseconds=1))
    for query in _clustered(5, seed=12):
        hits = store.retrieve("heavy", "note", namespace="/users/heavy/rare", mode="vector", query_embedding=query)
        assert [hit.record.id for hit in hits] == _exact(narrow_ids, narrow, query)
        assert expiring.id not in {hit.record.id for hit in hits}


def test_forget_drops_the_actors_version_row(store: MemoryStore) -> None:
    _fill(store, "heavy", _clustered(CACHE_MIN_ROWS))
    store.forget("heavy")
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM memory_vector_versions")).scalar() == 0
    assert store.retrieve("heavy", "note", mode="vector", query_embedding=_clustered(1)[0]) == []


@pytest.mark.parametrize(
    ("embeddings", "message"),
    [
        (np.ones((2, 128), np.float32), "128 dimensions but this store holds 384"),
        (np.full((2, 384), np.nan, np.float32), "NaN"),
        (np.zeros((2, 384), np.float32), "all-zero"),
        (np.ones((3, 384), np.float32), "shape"),
    ],
)
def test_invalid_vectors_are_refused_and_nothing_is_written(
    store: MemoryStore, embeddings: np.ndarray, message: str
) -> None:
    records = [NewRecord(namespace=FACTS, text="one"), NewRecord(namespace=FACTS, text="two")]
    with pytest.raises(InvalidMemoryInputError, match=message):
        store.add_records("alice", records, embeddings=embeddings)
    query = embeddings[0][:-1] if message == "shape" else embeddings[0]  # a 383-d query
    with pytest.raises(InvalidMemoryInputError, match=r"dimensions|NaN|all-zero"):
        store.retrieve("alice", "one", mode="vector", query_embedding=query)
    assert store.stats().records == 0


def test_a_bad_record_in_a_batch_writes_none_of_it(store: MemoryStore) -> None:
    records = [NewRecord(namespace=FACTS, text="fine"), NewRecord(namespace="no-slash", text="bad")]
    with pytest.raises(InvalidMemoryInputError, match="must start with '/'"):
        store.add_records("alice", records, embeddings=_clustered(2))
    assert store.stats().records == 0 and store.list_records("alice") == []


def test_pgvector_needs_postgresql(tmp_path: Path) -> None:
    with pytest.raises(InvalidMemoryInputError, match="PostgreSQL"):
        MemoryStore(f"sqlite:///{tmp_path / 'm.db'}", pgvector=True)


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_postgresql_with_and_without_pgvector_rank_alike(make_store: Callable[..., MemoryStore]) -> None:
    with_index, without = make_store(), make_store(pgvector=False)
    assert with_index.pgvector and not without.pgvector
    vectors = _clustered(300)
    ids = {name: _fill(store, "alice", vectors) for name, store in (("with", with_index), ("without", without))}
    for query in _clustered(5, seed=8):
        for name, store in (("with", with_index), ("without", without)):
            hits = store.retrieve("alice", "note", mode="vector", query_embedding=query)
            assert [hit.record.id for hit in hits] == _exact(ids[name], vectors, query)
            exact = dict(zip(ids[name], (vectors @ query).tolist(), strict=True))
            assert [hit.similarity for hit in hits] == pytest.approx([exact[hit.record.id] for hit in hits], abs=1e-6)
    with with_index.engine.connect() as connection:
        kinds = connection.execute(
            text("SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_records' AND indexdef LIKE '%hnsw%'")
        ).all()
    assert kinds, "an HNSW index on memory_records.embedding_vec"


def test_postgresql_without_the_extension_falls_back(memory_postgres_url: str, accelerator: object) -> None:
    """A role that may not CREATE EXTENSION, in a database without it: exact search, or a clear error."""
    with _database_and_role(memory_postgres_url, role_owns_it=True) as (database, role):
        plain = database.set(username=role).render_as_string(hide_password=False)
        with pytest.raises(MemoryStoreError, match="pgvector=True but CREATE EXTENSION vector failed"):
            MemoryStore(plain, pgvector=True, accelerator=accelerator)  # type: ignore[arg-type]
        with MemoryStore(plain, accelerator=accelerator) as store:  # type: ignore[arg-type]
            assert not store.pgvector
            _searches_exactly(store, seed=2)


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
def test_analyze_gives_postgresql_the_row_counts_its_plans_need(make_store: Callable[..., MemoryStore]) -> None:
    """Unanalyzed, PostgreSQL guesses a few hundred rows per actor and scans a heavy actor's rows instead of the
    HNSW index; ``analyze()`` records the real counts (``reltuples`` stays -1 until a table is analyzed)."""
    store = make_store()
    _fill(store, "heavy", _clustered(300))
    store.analyze()  # on SQLite: nothing to do, and no error
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect() as connection:
            counted = connection.execute(text("SELECT reltuples FROM pg_class WHERE oid = 'memory_records'::regclass"))
            assert counted.scalar() == 300


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_pgvector_searches_read_similarities_not_embeddings(make_store: Callable[..., MemoryStore]) -> None:
    """The database computes each candidate's similarity: a search statement selects the float32 bytea (~3 kB per
    row as hex) only for rows without ``embedding_vec``, so the heap keeps it out of line and a walk over an actor's
    rows reads narrow rows."""
    store = make_store()
    assert store.pgvector
    vectors = _clustered(400)
    _fill(store, "alice", vectors)
    selected: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            selected.append(re.split(r"\sFROM\s", statement)[0])

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        for mode in ("hybrid", "vector"):
            query = _clustered(1, seed=4)[0]
            assert store.retrieve("alice", "note topic 3", mode=mode, query_embedding=query)  # type: ignore[arg-type]
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    assert any("<=>" in columns for columns in selected)
    assert not [columns for columns in selected if re.search(r"(?<!THEN )memory_records\.embedding\b(?!_vec)", columns)]
    with store.engine.connect() as connection:
        heap = connection.execute(text("SELECT pg_relation_size('memory_records')")).scalar()
        options = connection.execute(
            text("SELECT reloptions FROM pg_class WHERE oid = to_regclass('memory_records')")
        ).scalar()
    assert heap is not None and heap / len(vectors) < 700, "rows hold their embeddings out of line"
    assert options == ["toast_tuple_target=1536"]


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_rows_written_without_pgvector_are_found_and_scored_exactly(make_store: Callable[..., MemoryStore]) -> None:
    """A store opened with ``pgvector=False`` on the same database writes no ``embedding_vec``: a pgvector store still
    finds those rows (full text, or every row in scope) and scores them from their float32 embedding."""
    indexed = make_store()
    assert indexed.pgvector
    plain = MemoryStore(engine=indexed.engine, pgvector=False)
    vectors = _clustered(30)
    ids = _fill(plain, "alice", vectors[:20]) + _fill(indexed, "alice", vectors[20:])
    query = _clustered(1, seed=5)[0]
    exact = dict(zip(ids, (vectors @ query).tolist(), strict=True))
    for mode in ("hybrid", "vector"):
        hits = indexed.retrieve("alice", "note topic", mode=mode, query_embedding=query, top_k=30)  # type: ignore[arg-type]
        assert hits and all(hit.similarity == pytest.approx(exact[hit.record.id], abs=1e-6) for hit in hits)
    hybrid = indexed.retrieve("alice", "note", query_embedding=query, top_k=30)
    assert {hit.record.id for hit in hybrid} == set(ids)  # every row matches "note": the unindexed ones too


def test_a_role_that_does_not_own_the_tables_opens_a_store_with_wide_rows(
    memory_postgres_url: str, accelerator: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The out-of-line layout is the tables' owner's to set: an application role without ALTER rights still opens
    the store (and searches) on tables whose rows are wide, with a warning saying why."""
    with _database_and_role(memory_postgres_url, role_owns_it=False) as (owner_url, role):
        with MemoryStore(owner_url.render_as_string(hide_password=False), accelerator=accelerator) as owner:  # type: ignore[arg-type]
            assert owner.pgvector
        owner_engine = create_engine(owner_url, isolation_level="AUTOCOMMIT")
        with owner_engine.connect() as connection:  # the layout of a database created before this release
            for table in ("memory_records", "memory_events"):
                connection.execute(text(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE EXTENDED"))
                connection.execute(text(f"ALTER TABLE {table} RESET (toast_tuple_target)"))
            connection.execute(text(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"))
            connection.execute(text(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}"))
        owner_engine.dispose()
        application = owner_url.set(username=role).render_as_string(hide_password=False)
        with caplog.at_level("WARNING", logger="agentcore.memory.pgvector"):
            store = MemoryStore(application, accelerator=accelerator)  # type: ignore[arg-type]
        with store:
            assert store.pgvector and "keeps its embeddings inline" in caplog.text
            _searches_exactly(store, seed=6)
