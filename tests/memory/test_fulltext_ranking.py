"""Full-text rankings: FTS5's best matches alone equal the full join; the match cap bounds heavy actors only."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import create_engine, text

from agentcore.memory import InvalidMemoryInputError, MemoryStore, NewRecord, search
from agentcore.memory.database import utcnow
from agentcore.memory.migrations import LATEST_VERSION, migrate
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
    scope = Scope(RECORDS, "a", utcnow(), tenant="default")
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


def _capped(store: MemoryStore, namespace: str | None, limit: int, match_cap: int | None) -> list[int]:
    scope = Scope(RECORDS, "a", utcnow(), tenant="default")
    if namespace is not None:
        scope.conditions.append(RECORDS.c.namespace == namespace)
    with store.engine.connect() as connection:
        return search.fulltext_ranking(connection, scope, ["apple", "cream"], limit, match_cap=match_cap)


def _strong_then_weak(
    store: MemoryStore, strong: int, weak: int, namespace: str = INSIDE
) -> tuple[list[int], list[int]]:
    """``strong`` rows that score best, then ``weak`` newer ones that score worse; their ids."""
    news = [NewRecord(namespace=namespace, text=f"apple cream apple cream {i}") for i in range(strong)]
    news += [NewRecord(namespace=namespace, text=f"apple {'filler ' * (5 + i % 9)}{i}") for i in range(weak)]
    ids = store.add_records("a", news, embeddings=np.full((len(news), 384), 0.05, dtype=np.float32))
    return ids[:strong], ids[strong:]


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
@pytest.mark.parametrize("limit", [1, 7, 200])
def test_an_actor_under_the_cap_gets_exactly_the_uncapped_ranking(store: MemoryStore, limit: int) -> None:
    _records(store, OUTSIDE, 30)
    _records(store, INSIDE, 60)
    _records(store, INSIDE, 10, ttl=timedelta(seconds=-1))
    for namespace in (INSIDE, None):
        exact = _capped(store, namespace, limit, None)
        assert exact and _capped(store, namespace, limit, 100) == exact  # 100 >= the actor's 100 matches


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
def test_an_actor_over_the_cap_is_ranked_from_its_newest_matches(store: MemoryStore) -> None:
    strong, weak = _strong_then_weak(store, 20, 60)
    everything = _capped(store, None, 200, None)
    assert everything[:20] == sorted(strong) and sorted(everything) == sorted(strong + weak)
    ranked = _capped(store, None, 10, 25)  # the 25 newest matches: all weak
    assert ranked == [row for row in everything if row in weak[-25:]][:10]
    ranked = _capped(store, None, 10, 70)  # 10 strong rows are among the 70 newest, ranked first as without a cap
    assert ranked == sorted(strong)[-10:]


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
def test_a_capped_ranking_still_reaches_older_matches_of_a_narrow_namespace(store: MemoryStore) -> None:
    """The newest matches all lie outside the queried namespace: the cap counts the matches in scope."""
    inside, _ = _strong_then_weak(store, 5, 0, INSIDE)
    _strong_then_weak(store, 0, 150, OUTSIDE)
    assert _capped(store, INSIDE, 10, 20) == _capped(store, INSIDE, 10, None) == sorted(inside)


@pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)
def test_the_store_caps_full_text_matches_as_configured(make_store: Any) -> None:
    assert make_store().fulltext_match_cap == search.FULLTEXT_MATCH_CAP
    capped, exact = make_store(fulltext_match_cap=25), make_store(fulltext_match_cap=None)
    strong, weak = _strong_then_weak(exact, 20, 60)
    newest = {hit.record.id for hit in capped.retrieve("a", "apple cream", mode="fulltext", top_k=10)}
    assert newest <= set(weak[-25:])
    assert [hit.record.id for hit in exact.retrieve("a", "apple cream", mode="fulltext", top_k=10)] == strong[:10]


@pytest.mark.parametrize("cap", [0, -5, 2.5, "100", True])
def test_a_cap_that_is_not_a_positive_integer_is_refused(make_store: Any, cap: Any) -> None:
    with pytest.raises(InvalidMemoryInputError, match="fulltext_match_cap"):
        make_store(fulltext_match_cap=cap)


def test_a_version_5_postgresql_database_gains_the_newest_first_indexes(memory_postgres_url: str) -> None:
    schema = f"memtest_{uuid.uuid4().hex[:12]}"
    admin = create_engine(memory_postgres_url)
    with admin.begin() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    engine = create_engine(memory_postgres_url, connect_args={"options": f"-csearch_path={schema},extensions"})
    try:
        assert migrate(engine, target=5) == 5
        with engine.begin() as connection:  # a record written by the version-5 library
            connection.execute(
                text(
                    "INSERT INTO memory_records (actor_id, namespace, strategy, text, metadata, source_event_ids, "
                    "created_at, updated_at, embedding) VALUES ('a', :ns, 'custom', 'apple cream', '{}', '[]', "
                    "now(), now(), :vector)"
                ),
                {"ns": INSIDE, "vector": np.full(384, 0.05, dtype="<f4").tobytes()},
            )
        with MemoryStore(engine=engine, pgvector=False) as store:
            assert store.schema_version == LATEST_VERSION == 8
            assert [hit.record.text for hit in store.retrieve("a", "apple", mode="fulltext")] == ["apple cream"]
            with store.engine.connect() as connection:
                indexes = connection.execute(
                    text("SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = :s AND indexname LIKE :n"),
                    {"s": schema, "n": "%_actor_newest"},
                ).all()
        assert {table: definition.split(" USING ")[1] for table, definition in indexes} == {
            "memory_events": "btree (tenant, actor_id, id)",  # tenant first since version 8
            "memory_records": "btree (tenant, actor_id, id)",
        }
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
