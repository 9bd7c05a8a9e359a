"""SQLite BM25 rankings read from FTS5's best matches alone equal the full join over every match."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from agentcore.memory import MemoryStore, NewRecord, search
from agentcore.memory.database import utcnow
from agentcore.memory.search import Scope
from agentcore.memory.tables import RECORDS

INSIDE, OUTSIDE = "/users/a/inside", "/users/a/outside"


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> list[list[int] | None]:
    """What each call of search.sqlite_best_matches returned (``None``: it could not answer alone)."""
    answers: list[list[int] | None] = []
    best_matches = search.sqlite_best_matches

    def recorded(*args: Any) -> list[int] | None:
        answers.append(best_matches(*args))
        return answers[-1]

    monkeypatch.setattr(search, "sqlite_best_matches", recorded)
    return answers


def _records(store: MemoryStore, namespace: str, count: int, *, ttl: timedelta | None = None) -> None:
    # repeated texts: equal BM25 scores, so ties at the cut-off are exercised too
    texts = [f"{'apple ' * (1 + i % 4)}pie number {i % 7} with cream {i % 3}" for i in range(count)]
    vectors = np.eye(count, 384, dtype=np.float32) + 0.01
    store.add_records("a", [NewRecord(namespace=namespace, text=t, ttl=ttl) for t in texts], embeddings=vectors)


def _ranking(store: MemoryStore, namespace: str | None, limit: int, informative_only: bool = False) -> list[int]:
    scope = Scope(RECORDS, "a", utcnow())
    if namespace is not None:
        scope.conditions.append(RECORDS.c.namespace == namespace)
    with store.engine.connect() as connection:
        return search.fulltext_ranking(
            connection, scope, ["apple", "cream", "2"], limit, informative_only=informative_only
        )


@pytest.mark.parametrize("limit", [1, 5, 40])
@pytest.mark.parametrize("informative_only", [False, True])
def test_best_matches_rank_exactly_like_the_full_join(
    store: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    answered: list[list[int] | None],
    limit: int,
    informative_only: bool,
) -> None:
    _records(store, OUTSIDE, 30)  # the best-scoring rows of the actor lie outside the queried namespace...
    _records(store, INSIDE, 120)
    _records(store, INSIDE, 20, ttl=timedelta(seconds=-1))  # ...or have expired
    fast = {namespace: _ranking(store, namespace, limit, informative_only) for namespace in (INSIDE, None)}
    assert any(result is not None for result in answered), "FTS5's best matches answered alone at least once"
    monkeypatch.setattr(search, "FULLTEXT_FACTORS", ())  # only the join over every match
    assert fast == {namespace: _ranking(store, namespace, limit, informative_only) for namespace in (INSIDE, None)}
    inside = {r.id for r in store.list_records("a", namespace=INSIDE, limit=1000)}
    assert fast[INSIDE] and set(fast[INSIDE]) <= inside


def test_too_few_best_matches_in_scope_fall_back_to_every_match(
    store: MemoryStore, answered: list[list[int] | None]
) -> None:
    _records(store, OUTSIDE, 200)
    weak = [NewRecord(namespace=INSIDE, text=f"apple {'filler ' * 40}{i}") for i in range(3)]  # scores last
    store.add_records("a", weak, embeddings=np.full((3, 384), 0.05, dtype=np.float32))
    ranking = _ranking(store, INSIDE, 5)
    assert answered == [None] * len(search.FULLTEXT_FACTORS)  # 10 and 80 best matches: all outside
    assert sorted(ranking) == sorted(r.id for r in store.list_records("a", namespace=INSIDE))
