"""Attacks on per-actor isolation through every public path, on SQLite and PostgreSQL (with and without pgvector).

Each test gives two actors look-alike or hostile ids (case, NFKC, zero-width, LIKE wildcards, quotes, prefixes,
separators, very long ids) and checks that neither can read, count, change or erase the other's events and records,
whatever the query text or the ids it passes.
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event

from agentcore.memory import InvalidMemoryInputError, MemoryNotFoundError, MemoryStore, NewRecord

BACKENDS = ["sqlite", "postgresql"]

# (attacker, victim): ids that a normalising, case-folding, LIKE-matching or prefix-matching filter would merge
LOOKALIKES = [
    ("Alice", "alice"),
    ("ａｌｉｃｅ", "alice"),  # fullwidth: NFKC-equal
    ("ﬁle", "file"),  # ligature: NFKC-equal
    ("al\u200bice", "alice"),  # zero-width space
    ("alice\u200d", "alice"),  # zero-width joiner at the end
    ("e\u0301", "\u00e9"),  # NFD against NFC
    ("alice ", "alice"),  # trailing space (CHAR semantics would pad)
    ("ALICE", "alice"),
    ("alic", "alice"),  # prefix
    ("alice", "alice:bob"),  # the id is a prefix of the other's, with a separator
    ("tenant/alice", "tenant"),
    ("tenant:alice", "tenant:"),
    ("al%", "alice"),  # LIKE wildcards
    ("al_ce", "alice"),
    ("%", "alice"),
    ("_", "a"),
    ("' OR '1'='1", "alice"),
    ('alice" OR actor_key : *', "alice"),  # FTS5 syntax
    ("alice | bob", "alice"),  # tsquery syntax
    ("x" * 255, "x" * 254),  # longest id against its prefix
    ("🚀" * 255, "🚀" * 254),  # longest id in 4-byte characters (1,020 bytes)
    ("\\", "\\\\"),
    ("İ", "i̇"),  # dotted capital I and its lower-case (two code points)
]
LOOKALIKE_IDS = [f"{index}" for index in range(len(LOOKALIKES))]

HOSTILE_QUERIES = [
    "' OR 1=1 --",
    "zebracorn') UNION SELECT text FROM memory_records --",
    '" OR actor_key : * OR "',
    "text : zebracorn OR actor_key : a",
    "zebracorn | !quokka",
    "zebracorn:* & !x",
    "NEAR(zebracorn quokka)",
    "* ^ : ( ) \" '",
    "%zebracorn%",
    "_ebracorn",
    "\\x00 zebracorn",
    "zebracorn; DROP TABLE memory_events; --",
]


def _store_of_kind(make_store: Callable[..., MemoryStore], backend_kind: str) -> MemoryStore:
    return make_store(pgvector=False) if backend_kind == "no-pgvector" else make_store()


def _secret_vector(seed: int, dimension: int = 384) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=dimension)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def _fill(store: MemoryStore, actor: str, secret: str) -> tuple[int, int]:
    """One event and one record of ``actor`` holding ``secret``; their ids."""
    added = store.add_event(actor, "s1", "user", f"my password hint is {secret}")
    record = store.add_record(actor, "/facts", f"the password hint is {secret}", metadata={"owner": secret})
    return added.id, record.id


def _assert_only_own(store: MemoryStore, actor: str, secret: str, other: str, query: str) -> None:
    for mode in ("hybrid", "vector", "fulltext"):
        events = store.search_events(actor, query, mode=mode)
        records = store.retrieve(actor, query, mode=mode, namespace_prefix="/")
        for hit in events:
            assert hit.event.actor_id == actor and other not in hit.event.text, (mode, hit)
        for record_hit in records:
            assert record_hit.record.actor_id == actor and other not in record_hit.record.text, (mode, record_hit)
        if mode != "fulltext":  # the vector side always finds the actor's one row of each kind
            assert [hit.event.text for hit in events] == [f"my password hint is {secret}"], mode
            assert [hit.record.text for hit in records] == [f"the password hint is {secret}"], mode


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
@pytest.mark.parametrize(("attacker", "victim"), LOOKALIKES, ids=LOOKALIKE_IDS)
def test_lookalike_ids_never_reach_each_others_data(
    make_store: Callable[..., MemoryStore], attacker: str, victim: str
) -> None:
    store = make_store()
    victim_event, victim_record = _fill(store, victim, "zebracorn")
    attacker_event, attacker_record = _fill(store, attacker, "quokka")
    if unicodedata.normalize("NFKC", attacker).casefold() == unicodedata.normalize("NFKC", victim).casefold():
        assert attacker != victim  # the pair is a look-alike, never the same id

    for actor, secret, other in ((attacker, "quokka", "zebracorn"), (victim, "zebracorn", "quokka")):
        _assert_only_own(store, actor, secret, other, f"password hint {other}")
        assert [e.text for e in store.list_events(actor, "s1")] == [f"my password hint is {secret}"]
        assert [e.text for e in store.last_turns(actor, "s1")] == [f"my password hint is {secret}"]
        assert store.list_sessions(actor) == ["s1"]
        assert [r.text for r in store.list_records(actor)] == [f"the password hint is {secret}"]
        assert [r.text for r in store.list_records(actor, namespace="/facts")] == [f"the password hint is {secret}"]
        assert [r.text for r in store.list_records(actor, namespace_prefix="/")] == [f"the password hint is {secret}"]

    # the attacker names the victim's ids on every path that takes one
    with pytest.raises(MemoryNotFoundError):
        store.get_event(attacker, victim_event)
    with pytest.raises(MemoryNotFoundError):
        store.get_record(attacker, victim_record)
    with pytest.raises(MemoryNotFoundError):
        store.record_history(attacker, victim_record)
    with pytest.raises(MemoryNotFoundError):
        store.update_record(attacker, victim_record, text="overwritten by the attacker", metadata={"owner": "x"})
    with pytest.raises(MemoryNotFoundError):
        store.delete_record(attacker, victim_record)
    with pytest.raises(MemoryNotFoundError):  # hide the victim's record behind the attacker's
        store.supersede_record(attacker, victim_record, attacker_record)
    with pytest.raises(MemoryNotFoundError):  # or make the attacker's point at the victim's
        store.supersede_record(attacker, attacker_record, victim_record)
    assert store.index_events(attacker) == 0

    # erasing the attacker erases nothing of the victim
    report = store.forget(attacker)
    assert (report.events, report.records, report.sessions) == (1, 1, 1)
    assert store.get_event(victim, victim_event).text == "my password hint is zebracorn"
    record = store.get_record(victim, victim_record)
    assert (record.text, record.metadata) == ("the password hint is zebracorn", {"owner": "zebracorn"})
    assert record.superseded_by is None
    _assert_only_own(store, victim, "zebracorn", "quokka", "password hint zebracorn")
    assert store.list_sessions(victim) == ["s1"]
    stats = store.stats()
    assert (stats.actors, stats.events, stats.records, stats.superseded_records) == (1, 1, 1, 0)
    with pytest.raises(MemoryNotFoundError):
        store.get_event(attacker, attacker_event)


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
@pytest.mark.parametrize("backend_kind", ["default", "no-pgvector"])
@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_a_query_that_embeds_sql_or_search_syntax_reads_only_the_callers_rows(
    make_store: Callable[..., MemoryStore], backend_kind: str, query: str
) -> None:
    store = _store_of_kind(make_store, backend_kind)
    _fill(store, "victim", "zebracorn")
    _fill(store, "attacker", "quokka")
    _assert_only_own(store, "attacker", "quokka", "zebracorn", query)
    _assert_only_own(store, "victim", "zebracorn", "quokka", query)
    assert store.stats().events == 2 and store.stats().records == 2


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
@pytest.mark.parametrize("backend_kind", ["default", "no-pgvector"])
def test_the_victims_exact_embedding_as_query_finds_only_the_callers_rows(
    make_store: Callable[..., MemoryStore], backend_kind: str
) -> None:
    """A caller who knows (or guesses) another actor's embedding, and words, still ranks only its own rows."""
    store = _store_of_kind(make_store, backend_kind)
    secret = _secret_vector(1)
    victim_ids = store.add_records(
        "victim", [NewRecord(namespace="/facts", text=f"zebracorn secret {i}") for i in range(30)],
        embeddings=np.tile(secret, (30, 1)),
    )  # fmt: skip
    own = store.add_records(
        "attacker", [NewRecord(namespace="/facts", text="an unrelated note")], embeddings=_secret_vector(2)[None, :]
    )
    for mode in ("hybrid", "vector"):
        hits = store.retrieve("attacker", "zebracorn secret", mode=mode, query_embedding=secret, top_k=100)
        assert [hit.record.id for hit in hits] == own, mode
        hits = store.retrieve("victim", "zebracorn secret", mode=mode, query_embedding=secret, top_k=100)
        assert sorted(hit.record.id for hit in hits) == sorted(victim_ids), mode
    assert store.retrieve("attacker", "zebracorn secret", mode="fulltext", top_k=100) == []


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
def test_a_heavy_neighbour_near_the_query_neither_leaks_nor_crowds_out_the_callers_rows(
    make_store: Callable[..., MemoryStore],
) -> None:
    """The victim's many rows are all nearer the query than the caller's: a global nearest-k filtered afterwards would
    return the caller nothing; nominating inside the caller's conditions returns exactly the caller's rows."""
    store = make_store()
    secret = _secret_vector(1)
    rng = np.random.default_rng(5)
    near = secret + 0.05 * rng.normal(size=(2500, 384))
    with store.bulk_import(maintenance_work_mem="64MB"):  # one HNSW build instead of 2,500 inserts into the graph
        store.add_records(
            "victim", [NewRecord(namespace="/facts", text=f"zebracorn note {i}") for i in range(len(near))],
            embeddings=near.astype(np.float32),
        )  # fmt: skip
    far = -secret + 0.5 * rng.normal(size=(40, 384))
    own = store.add_records(
        "attacker", [NewRecord(namespace="/facts", text=f"quokka note {i}") for i in range(len(far))],
        embeddings=far.astype(np.float32),
    )  # fmt: skip
    for mode, top_k in (("vector", 10), ("vector", 100), ("hybrid", 100)):
        hits = store.retrieve("attacker", "zebracorn note", mode=mode, query_embedding=secret, top_k=top_k)
        assert {hit.record.actor_id for hit in hits} == {"attacker"}, mode
        assert len(hits) == min(top_k, len(own)), mode
    hits = store.retrieve("victim", "quokka note", mode="vector", query_embedding=-secret, top_k=10)
    assert len(hits) == 10 and {hit.record.actor_id for hit in hits} == {"victim"}


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
def test_expired_rows_and_other_namespaces_stay_out_of_every_path(make_store: Callable[..., MemoryStore]) -> None:
    from datetime import timedelta

    store = make_store()
    expired = store.add_record("alice", "/facts", "the zebracorn expired", ttl=timedelta(microseconds=1))
    live = store.add_record("alice", "/facts", "the zebracorn lives")
    other = store.add_record("alice", "/facts-other", "the zebracorn elsewhere")
    store.add_record("alice%", "/facts", "the zebracorn of alice%")
    for mode in ("hybrid", "vector", "fulltext"):
        hits = store.retrieve("alice", "zebracorn", namespace="/facts", mode=mode)
        assert [hit.record.id for hit in hits] == [live.id], mode
        # '%' and '_' in a prefix are data: '/fact_' matches neither '/facts' nor '/facts-other'
        assert store.retrieve("alice", "zebracorn", namespace_prefix="/fact_", mode=mode) == []
        assert store.retrieve("alice", "zebracorn", namespace_prefix="/fact%", mode=mode) == []
    with pytest.raises(MemoryNotFoundError):
        store.get_record("alice", expired.id)
    with pytest.raises(MemoryNotFoundError):
        store.update_record("alice", expired.id, text="revived")
    assert {r.id for r in store.list_records("alice")} == {live.id, other.id}


def _unit_rows(rows: int, dimension: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dimension))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_an_hnsw_scan_that_stops_early_drops_none_of_the_callers_rows(make_store: Callable[..., MemoryStore]) -> None:
    """pgvector's iterative scan gives up after ``hnsw.max_scan_tuples`` (20,000 by default) and returns fewer rows
    than asked for: that is no proof that the caller has no more rows in scope.

    At scale the planner takes the HNSW index by itself (20,000 records of ``heavy`` in /a, 60 in /b, 20,000 of
    ``other`` in /b: a vector search of /b for 60 returned 26); here the same plan is forced on a small table.
    """
    store = make_store(dimension=8)
    assert store.pgvector

    @event.listens_for(store.engine, "connect")
    def _hnsw_plans(connection: Any, _record: Any) -> None:
        with connection.cursor() as cursor:  # the plan the planner picks for a large table, and an early stop
            cursor.execute("SET enable_sort = off; SET hnsw.max_scan_tuples = 300")

    store.engine.dispose()
    store.add_records(
        "heavy", [NewRecord(namespace="/a", text="note") for _ in range(1500)], embeddings=_unit_rows(1500, 8, 1)
    )
    store.add_records(
        "other", [NewRecord(namespace="/b", text="note") for _ in range(1500)], embeddings=_unit_rows(1500, 8, 2)
    )
    vectors = _unit_rows(40, 8, 3)
    ids = store.add_records("heavy", [NewRecord(namespace="/b", text="note") for _ in range(40)], embeddings=vectors)
    store.analyze()
    query = _unit_rows(1, 8, 4)[0]
    exact = [ids[i] for i in np.argsort(-(vectors @ query), kind="stable")]
    for top_k in (10, 40):
        hits = store.retrieve("heavy", "note", namespace="/b", mode="vector", query_embedding=query, top_k=top_k)
        assert [hit.record.id for hit in hits] == exact[:top_k]


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_a_vector_search_finds_the_rows_written_without_embedding_vec(make_store: Callable[..., MemoryStore]) -> None:
    """Rows written by a ``pgvector=False`` store have no ``embedding_vec``, so HNSW never nominates them: a vector
    search that got fewer nominees than it asked for must still read them. (When the actor's indexed rows fill the
    nomination they are still left out: see docs/memory.md.)"""
    indexed = make_store(dimension=8)
    plain = MemoryStore(engine=indexed.engine, pgvector=False, dimension=8)
    vectors = _unit_rows(30, 8, 1)
    records = [NewRecord(namespace="/facts", text=f"note {i}") for i in range(30)]
    ids = plain.add_records("alice", records[:20], embeddings=vectors[:20])
    ids += indexed.add_records("alice", records[20:], embeddings=vectors[20:])
    query = _unit_rows(1, 8, 2)[0]
    exact = [ids[i] for i in np.argsort(-(vectors @ query), kind="stable")]
    for top_k in (15, 30):
        hits = indexed.retrieve("alice", "note", mode="vector", query_embedding=query, top_k=top_k)
        assert [hit.record.id for hit in hits] == exact[:top_k]


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
@pytest.mark.parametrize("query", ["about", "very own", "² ³", "s t"])
def test_a_query_without_searchable_words_matches_no_row(make_store: Callable[..., MemoryStore], query: str) -> None:
    """Words that PostgreSQL's parser drops (its English stop words, more than ours, or characters it does not index)
    left an empty tsquery, and ``'' && actor`` is the actor's lexeme alone: every row of the actor matched."""
    store = make_store()
    for i in range(3):
        store.add_event("alice", "s1", "user", f"the zebracorn ate {i} apples")
        store.add_record("alice", "/facts", f"the zebracorn likes pear number {i}")
    assert store.search_events("alice", query, mode="fulltext") == []
    assert store.retrieve("alice", query, mode="fulltext") == []


@pytest.mark.parametrize("same_store", [True, False], ids=["one process", "two processes"])
def test_forget_leaves_no_cached_matrix_that_nominates(store: MemoryStore, same_store: bool) -> None:
    """SQLite's cache of an actor's embeddings is keyed by the actor's version, which forget deletes: an actor id
    written to again as often as before got the same version back, and its forgotten matrix nominated, in the
    forgetting store and in another one on the same file (as another process has)."""
    from agentcore.memory.vectors import CACHE_MIN_ROWS

    writer = MemoryStore(engine=store.engine, dimension=8)
    reader = writer if same_store else MemoryStore(engine=store.engine, dimension=8)
    records = [NewRecord(namespace="/facts", text=f"note {i}") for i in range(CACHE_MIN_ROWS)]
    query = _unit_rows(1, 8, 3)[0]
    writer.add_records("alice", records, embeddings=_unit_rows(CACHE_MIN_ROWS, 8, 1))
    assert len(reader.retrieve("alice", "note", mode="vector", query_embedding=query)) == 10
    assert ("memory_records", "default", "alice") in reader._nominator  # type: ignore[operator]
    writer.forget("alice")
    assert ("memory_records", "default", "alice") not in writer._nominator  # type: ignore[operator]
    vectors = _unit_rows(CACHE_MIN_ROWS, 8, 2)
    ids = writer.add_records("alice", records, embeddings=vectors)
    hits = reader.retrieve("alice", "note", mode="vector", query_embedding=query)
    assert [hit.record.id for hit in hits] == [ids[i] for i in np.argsort(-(vectors @ query), kind="stable")[:10]]


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
def test_a_prefix_ending_with_a_slash_is_a_subtree_of_whole_segments(make_store: Callable[..., MemoryStore]) -> None:
    """One actor keeping its users apart by namespace: ``/users/al/`` is /users/al and what lies under it, never
    /users/alice (``/users/al`` without the slash still compares characters, as documented)."""
    store = make_store()
    root = store.add_record("app", "/users/al", "the zebracorn of al")
    below = store.add_record("app", "/users/al/work", "the zebracorn at al's work")
    other = store.add_record("app", "/users/alice", "the zebracorn of alice")
    for mode in ("hybrid", "vector", "fulltext"):
        hits = store.retrieve("app", "zebracorn", namespace_prefix="/users/al/", mode=mode)
        assert sorted(hit.record.id for hit in hits) == [root.id, below.id], mode
        hits = store.retrieve("app", "zebracorn", namespace_prefix="/users/al", mode=mode)
        assert sorted(hit.record.id for hit in hits) == [root.id, below.id, other.id], mode
    assert [r.id for r in store.list_records("app", namespace_prefix="/users/al/")] == [root.id, below.id]
    assert [r.id for r in store.list_records("app", namespace_prefix="/")] == [root.id, below.id, other.id]


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
def test_supersede_cycles_cannot_hang_record_history(make_store: Callable[..., MemoryStore]) -> None:
    """record_history walked predecessors until none was left: a record superseding itself, or two superseding each
    other, looped forever and grew the chain until the process ran out of memory (every actor served by it)."""
    store = make_store(dimension=4)
    first, second = store.add_records(
        "alice", [NewRecord(namespace="/f", text="x"), NewRecord(namespace="/f", text="y")], embeddings=np.eye(4)[:2]
    )
    with pytest.raises(InvalidMemoryInputError, match="cannot supersede itself"):
        store.supersede_record("alice", first, first)
    store.supersede_record("alice", first, second)
    store.supersede_record("alice", second, first)
    assert [record.id for record in store.record_history("alice", second)] == [first, second]
    assert [record.id for record in store.record_history("alice", first)] == [second, first]


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_a_pgvector_false_store_leaves_no_stale_embedding_vec(make_store: Callable[..., MemoryStore]) -> None:
    """A store opened with ``pgvector=False`` on tables that have ``embedding_vec`` re-embedded a record (or embedded
    an event) without touching it: a pgvector store then nominated and scored the row by its old text."""
    indexed = make_store()
    plain = MemoryStore(engine=indexed.engine, pgvector=False)
    record = indexed.add_record("alice", "/f", "I love hiking in the mountains")
    indexed.add_record("alice", "/f", "my cat is called Tom")
    plain.update_record("alice", record.id, text="my favourite food is sushi")
    plain.add_event("alice", "s1", "user", "I love hiking in the mountains")
    plain.index_events("alice")
    for search in ("retrieve", "search_events"):
        found = {
            name: [round(hit.similarity or 0.0, 5) for hit in getattr(store, search)("alice", "hiking", mode="vector")]
            for name, store in (("indexed", indexed), ("plain", plain))
        }
        assert found["indexed"] == found["plain"], search


@pytest.mark.parametrize("make_store", ["postgresql"], indirect=True)
def test_forget_leaves_no_remembered_large_actor(make_store: Callable[..., MemoryStore]) -> None:
    """With pgvector the store remembers which actors were large (to rank their full text beside the nomination):
    after ``forget`` nothing of the actor is left in it, other actors are kept."""
    store = make_store(dimension=8)
    assert store.pgvector and store._side is not None
    for actor in ("alice", "bob"):
        store._side.remember(("memory_records", "default", actor), large=True)
    store.forget("alice")
    assert not store._side.worth_it(("memory_records", "default", "alice"))
    assert store._side.worth_it(("memory_records", "default", "bob"))


# ---- tenants: an actor id is unique within a tenant only ----------------------------------------------------------


def _tenant_store(store: MemoryStore, tenant: str, accelerator: object, **kwargs: Any) -> MemoryStore:
    """A store of ``tenant`` on ``store``'s database (the same file or PostgreSQL schema)."""
    return MemoryStore(engine=store.engine, tenant=tenant, accelerator=accelerator, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
@pytest.mark.parametrize("backend_kind", ["default", "no-pgvector"])
def test_two_tenants_alice_never_reach_each_others_data(
    make_store: Callable[..., MemoryStore], accelerator: object, backend_kind: str
) -> None:
    """MemoryStore(tenant=...) only charged embeddings to the tenant: globex's alice listed, searched, counted,
    changed and erased acme's alice's memories (one person each, the same id in two tenants)."""
    acme = make_store(tenant="acme", pgvector=False) if backend_kind == "no-pgvector" else make_store(tenant="acme")
    options = {"pgvector": False} if backend_kind == "no-pgvector" else {}
    with _tenant_store(acme, "globex", accelerator, **options) as globex:
        acme_event, acme_record = _fill(acme, "alice", "zebracorn")
        globex_event, globex_record = _fill(globex, "alice", "quokka")
        for store, secret, other in ((acme, "zebracorn", "quokka"), (globex, "quokka", "zebracorn")):
            _assert_only_own(store, "alice", secret, other, f"password hint {other}")
            assert [e.text for e in store.list_events("alice", "s1")] == [f"my password hint is {secret}"]
            assert [e.text for e in store.last_turns("alice", "s1")] == [f"my password hint is {secret}"]
            assert store.list_sessions("alice") == ["s1"]
            assert [r.text for r in store.list_records("alice", namespace_prefix="/")] == [
                f"the password hint is {secret}"
            ]
            stats = store.stats()
            assert (stats.actors, stats.sessions, stats.events, stats.records) == (1, 1, 1, 1)
        # globex's alice names acme's alice's ids on every path that takes one
        with pytest.raises(MemoryNotFoundError):
            globex.get_event("alice", acme_event)
        with pytest.raises(MemoryNotFoundError):
            globex.get_record("alice", acme_record)
        with pytest.raises(MemoryNotFoundError):
            globex.update_record("alice", acme_record, text="overwritten by globex")
        with pytest.raises(MemoryNotFoundError):
            globex.supersede_record("alice", acme_record, globex_record)
        with pytest.raises(MemoryNotFoundError):
            globex.delete_record("alice", acme_record)
        assert globex.index_events("alice") == 0

        report = globex.forget("alice")
        assert (report.tenant, report.events, report.records, report.sessions) == ("globex", 1, 1, 1)
        assert globex.list_events("alice", "s1") == [] and globex.stats().events == 0
        assert globex.search_events("alice", "password hint", mode="fulltext") == []
        assert acme.get_event("alice", acme_event).text == "my password hint is zebracorn"
        assert acme.get_record("alice", acme_record).text == "the password hint is zebracorn"
        _assert_only_own(acme, "alice", "zebracorn", "quokka", "password hint zebracorn")
        assert acme.list_sessions("alice") == ["s1"]
        with pytest.raises(MemoryNotFoundError):
            globex.get_event("alice", globex_event)


@pytest.mark.parametrize("make_store", BACKENDS, indirect=True)
@pytest.mark.parametrize("spelling", ["\uff41\uff43\uff4d\uff45", "ac\u200bme", "acme\u2060"])
def test_a_tenant_is_canonical(make_store: Callable[..., MemoryStore], accelerator: object, spelling: str) -> None:
    """The gateway keeps tenant ``ａｃｍｅ`` as ``acme``: a store spelt so was a third tenant, and acme's erasure missed
    what it wrote."""
    acme = make_store(tenant="acme")
    acme.add_event("alice", "s1", "user", "acme's alice")
    with _tenant_store(acme, spelling, accelerator) as spelt:
        assert spelt.tenant == "acme"
        assert [e.text for e in spelt.list_events("alice", "s1")] == ["acme's alice"]
        spelt.add_event("alice", "s1", "user", "written through another spelling")
    assert [e.text for e in acme.list_events("alice", "s1")] == ["acme's alice", "written through another spelling"]


@pytest.mark.parametrize("tenant", ["", "\u200b", "a\x00b", "x" * 256, "t\ud800", 42, None])
def test_a_tenant_that_is_no_tenant_id_is_refused(tmp_path: Any, tenant: Any) -> None:
    with pytest.raises(InvalidMemoryInputError, match="tenant"):
        MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}", tenant=tenant)


def test_the_vector_cache_keeps_each_tenants_alice_apart(store: MemoryStore, accelerator: object) -> None:
    """SQLite's cached actor matrices were keyed by (table, actor) and their versions counted per actor: a heavy
    alice in two tenants shared one matrix of both tenants' rows."""
    from agentcore.memory.vectors import CACHE_MIN_ROWS

    records = [NewRecord(namespace="/facts", text=f"note {i}") for i in range(CACHE_MIN_ROWS)]
    query = _unit_rows(1, 8, 3)[0]
    acme = _tenant_store(store, "acme", accelerator, dimension=8)
    globex = _tenant_store(store, "globex", accelerator, dimension=8)
    vectors = {name: _unit_rows(CACHE_MIN_ROWS, 8, seed) for name, seed in (("acme", 1), ("globex", 2))}
    ids = {
        name: s.add_records("alice", records, embeddings=vectors[name])
        for name, s in (("acme", acme), ("globex", globex))
    }
    for name, tenant_store in (("acme", acme), ("globex", globex)):
        hits = tenant_store.retrieve("alice", "note", mode="vector", query_embedding=query)
        expected = [ids[name][i] for i in np.argsort(-(vectors[name] @ query), kind="stable")[:10]]
        assert [hit.record.id for hit in hits] == expected, name
        assert ("memory_records", name, "alice") in tenant_store._nominator  # type: ignore[operator]
    acme.forget("alice")
    assert acme.retrieve("alice", "note", mode="vector", query_embedding=query) == []
    assert len(globex.retrieve("alice", "note", mode="vector", query_embedding=query)) == 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_database_from_before_tenants_keeps_its_rows_in_the_default_tenant(
    request: pytest.FixtureRequest, tmp_path: Any, accelerator: object, backend: str
) -> None:
    """Rows written by the version-7 library (no tenant column) are the default tenant's after the upgrade: a store
    opened without a tenant sees them all, another tenant's none; the indexes lead with the tenant."""
    from sqlalchemy import create_engine, inspect, text

    from agentcore.memory.database import create_memory_engine
    from agentcore.memory.migrations import LATEST_VERSION, migrate

    schema = None
    if backend == "sqlite":
        engine = create_memory_engine(f"sqlite:///{tmp_path / 'memory.db'}")
    else:
        url, schema = (
            request.getfixturevalue("memory_postgres_url"),
            f"memtest_{uuid.uuid4().hex[:12]}",
        )
        with create_engine(url).begin() as connection:
            connection.execute(text(f"CREATE SCHEMA {schema}"))
        engine = create_engine(url, connect_args={"options": f"-csearch_path={schema},extensions"})
    assert migrate(engine, target=7) == 7
    with engine.begin() as connection:
        now = "'2024-01-01 10:00:00'"
        connection.execute(text(f"INSERT INTO memory_actors (actor_id, created_at) VALUES ('alice', {now})"))
        connection.execute(
            text(
                "INSERT INTO memory_sessions (actor_id, session_id, created_at, last_event_at) "
                f"VALUES ('alice', 's1', {now}, {now})"
            )
        )
        connection.execute(
            text(
                "INSERT INTO memory_events (actor_id, session_id, role, text, payload, metadata, created_at) "
                f"VALUES ('alice', 's1', 'user', 'my violin teacher lives in Vienna', NULL, '{{}}', {now})"
            )
        )
        connection.execute(
            text(
                "INSERT INTO memory_records (actor_id, namespace, strategy, text, metadata, source_event_ids, "
                f"created_at, updated_at, embedding) VALUES ('alice', '/facts', 'custom', 'alice plays the violin', "
                f"'{{}}', '[]', {now}, {now}, :vector)"
            ),
            {"vector": _unit_rows(1, 384, 5)[0].astype("<f4").tobytes()},
        )
    try:
        with MemoryStore(engine=engine, accelerator=accelerator) as store:  # type: ignore[arg-type]
            assert store.schema_version == LATEST_VERSION == 8
            assert [e.text for e in store.list_events("alice", "s1")] == ["my violin teacher lives in Vienna"]
            assert store.list_sessions("alice") == ["s1"]
            assert [hit.event.text for hit in store.search_events("alice", "violin Vienna")][:1] == [
                "my violin teacher lives in Vienna"
            ]
            assert [hit.record.text for hit in store.retrieve("alice", "violin")] == ["alice plays the violin"]
            stats = store.stats()
            assert (stats.actors, stats.sessions, stats.events, stats.records) == (1, 1, 1, 1)
            store.add_event("alice", "s1", "user", "a new turn after the upgrade")  # the session key holds the tenant
            with _tenant_store(store, "acme", accelerator) as acme:
                assert acme.list_events("alice", "s1") == [] and acme.list_sessions("alice") == []
                assert acme.retrieve("alice", "violin") == [] and acme.stats().events == 0
            indexes = {
                table: {index["name"]: index["column_names"] for index in inspect(engine).get_indexes(table)}
                for table in ("memory_events", "memory_records")
            }
            assert indexes["memory_events"]["ix_memory_events_tenant_actor_session"][:2] == ["tenant", "actor_id"]
            assert indexes["memory_records"]["ix_memory_records_tenant_actor_namespace"][:2] == ["tenant", "actor_id"]
            assert not any(columns[0] == "actor_id" for found in indexes.values() for columns in found.values())
            keys = {
                table: inspect(engine).get_pk_constraint(table)["constrained_columns"]
                for table in ("memory_actors", "memory_sessions")
            }
            assert keys == {
                "memory_actors": ["tenant", "actor_id"],
                "memory_sessions": ["tenant", "actor_id", "session_id"],
            }
    finally:
        engine.dispose()
        if schema is not None:
            with create_engine(request.getfixturevalue("memory_postgres_url")).begin() as connection:
                connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
