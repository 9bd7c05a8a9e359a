"""Statements built once per scope shape and run again with each query's values never mix actors or namespaces."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from sqlalchemy.exc import StatementError

from agentcore.memory import MemoryStore, NewRecord, search
from agentcore.memory.database import utcnow
from agentcore.memory.search import Scope
from agentcore.memory.tables import RECORDS

pytestmark = pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)


def _fill(store: MemoryStore) -> None:
    for actor in ("alice", "bob"):
        for namespace in ("/n/a", "/n/b"):
            news = [
                NewRecord(namespace=namespace, text=f"{actor} keeps a note about {namespace} {i}") for i in range(3)
            ]
            vectors = np.random.default_rng(len(actor) + len(namespace)).normal(size=(3, 384)).astype(np.float32)
            store.add_records(actor, news, embeddings=vectors)


@pytest.mark.parametrize("pgvector", [None, False])  # PostgreSQL: HNSW nominations, or exact search without them
def test_each_query_runs_the_shared_statement_with_its_own_actor_and_namespace(
    make_store: Callable[..., MemoryStore], pgvector: bool | None
) -> None:
    store = make_store(pgvector=pgvector)
    _fill(store)
    query = np.ones(384, dtype=np.float32)
    built: int | None = None
    for _ in range(2):
        for actor in ("alice", "bob"):
            for mode in ("hybrid", "vector", "fulltext"):
                for where in ({"namespace": "/n/a"}, {"namespace_prefix": "/n/b"}, {}):
                    hits = store.retrieve(actor, "note", mode=mode, query_embedding=query, **where)  # type: ignore[arg-type]
                    assert hits and all(hit.record.actor_id == actor for hit in hits)
                    prefix = where.get("namespace") or where.get("namespace_prefix") or "/n/"
                    assert all(hit.record.namespace.startswith(prefix) for hit in hits)
        # the second round builds nothing new: every statement of the first is run again
        built, before = len(search._REUSED), built
    assert before == built


def test_a_statement_run_without_its_scope_values_fails(store: MemoryStore) -> None:
    _fill(store)
    scope = Scope(RECORDS, "alice", utcnow(), tenant="default")
    with store.engine.connect() as connection:
        assert len(search.load_candidates(connection, scope, None, None).ids) == 6
        built = search.reused(
            ("candidates", False, False, True, type(None)),
            scope,
            lambda: search.candidate_query(scope, None, False, None),
        )
        assert "scope_actor_id" in str(built)  # the statement load_candidates built, with the actor as a parameter
        with pytest.raises(StatementError, match="scope_tenant"):
            connection.execute(built)
        with pytest.raises(StatementError, match="scope_actor_id"):  # a tenant alone reads no tenant's actors
            connection.execute(built, {"scope_tenant": "default"})


def test_a_condition_name_means_one_condition(store: MemoryStore) -> None:
    scope = Scope(RECORDS, "alice", utcnow(), tenant="default")
    scope.narrow("current", RECORDS.c.superseded_by.is_(None))
    with pytest.raises(ValueError, match="current"):
        scope.narrow("current", RECORDS.c.superseded_by.is_not(None))
