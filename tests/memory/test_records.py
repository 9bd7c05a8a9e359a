"""Long-term records on both backends: CRUD, namespaces, filters, scores, TTL, supersession."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agentcore.memory import InvalidMemoryInputError, MemoryNotFoundError, MemoryStore, NewRecord

pytestmark = pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)

FACTS = "/users/alice/facts"
PREFS = "/users/alice/preferences"


def test_record_crud(store: MemoryStore) -> None:
    record = store.add_record("alice", FACTS, "Alice is allergic to peanuts", metadata={"source": "chat"})
    assert store.get_record("alice", record.id) == record
    updated = store.update_record("alice", record.id, text="Alice is allergic to peanuts and shellfish")
    assert updated.text.endswith("shellfish") and updated.updated_at >= record.updated_at
    assert store.retrieve("alice", "shellfish allergy")[0].record.id == record.id
    store.delete_record("alice", record.id)
    with pytest.raises(MemoryNotFoundError):
        store.get_record("alice", record.id)
    with pytest.raises(MemoryNotFoundError):
        store.delete_record("alice", record.id)


def test_retrieve_honours_namespace_prefix_filters_and_min_score(store: MemoryStore) -> None:
    store.add_record("alice", FACTS, "Alice works as a pediatric nurse", metadata={"year": 2021, "tag": "job"})
    store.add_record("alice", FACTS, "Alice ran the Lisbon marathon", metadata={"year": 2023})
    store.add_record("alice", PREFS, "Alice prefers aisle seats on flights", metadata={"year": 2024})
    assert {hit.record.namespace for hit in store.retrieve("alice", "Alice", namespace=FACTS)} == {FACTS}
    assert len(store.retrieve("alice", "Alice", namespace_prefix="/users/alice/")) == 3
    assert store.retrieve("alice", "Alice", namespace_prefix="/users/al") != []  # a prefix of a segment matches
    assert store.retrieve("alice", "Alice", namespace_prefix="/users/%") == []  # '%' is data, not a wildcard
    hits = store.retrieve("alice", "Alice", filters={"year": {"$gte": 2023}})
    assert sorted(hit.record.metadata["year"] for hit in hits) == [2023, 2024]
    assert [h.record.metadata["tag"] for h in store.retrieve("alice", "job", filters={"tag": {"$exists": True}})] == [
        "job"
    ]
    top = store.retrieve("alice", "what does Alice do for a living?", top_k=1)[0]
    assert "nurse" in top.record.text and top.similarity is not None and 0 < top.similarity <= 1.0
    assert store.retrieve("alice", "what does Alice do for a living?", min_score=0.99) == []
    with pytest.raises(InvalidMemoryInputError, match="operator"):
        store.retrieve("alice", "x", filters={"year": {"$regex": ".*"}})
    with pytest.raises(InvalidMemoryInputError, match="not both"):
        store.retrieve("alice", "x", namespace=FACTS, namespace_prefix="/users/")


def test_expired_records_are_never_returned_and_are_purged(store: MemoryStore) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    gone = store.add_record("alice", FACTS, "Alice's temporary door code is 7781", expires_at=past)
    kept = store.add_record("alice", FACTS, "Alice's front door is painted red", ttl=timedelta(days=30))
    assert [hit.record.id for hit in store.retrieve("alice", "door code")] == [kept.id]
    assert [record.id for record in store.list_records("alice")] == [kept.id]
    assert store.purge().records == 1
    assert store.stats().records == 1
    with pytest.raises(MemoryNotFoundError):
        store.get_record("alice", gone.id)


def test_superseded_records_leave_retrieval_but_keep_history(store: MemoryStore) -> None:
    old = store.add_record("alice", PREFS, "Alice's favourite tea is green tea", subject="favourite tea")
    new = store.add_record("alice", PREFS, "Alice's favourite tea is earl grey", subject="favourite tea")
    store.supersede_record("alice", old.id, new.id)
    assert [hit.record.id for hit in store.retrieve("alice", "favourite tea")] == [new.id]
    assert [r.id for r in store.record_history("alice", new.id)] == [old.id, new.id]
    assert store.stats().superseded_records == 1
    assert {h.record.id for h in store.retrieve("alice", "favourite tea", include_superseded=True)} == {old.id, new.id}


def test_bulk_records_with_precomputed_embeddings_use_exact_cosine(store: MemoryStore) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(50, 384)).astype(np.float32)
    records = [NewRecord(namespace=FACTS, text=f"note number {i}") for i in range(50)]
    ids = store.add_records("alice", records, embeddings=vectors)
    query = vectors[17] + 0.01 * rng.normal(size=384).astype(np.float32)
    hits = store.retrieve("alice", "note", mode="vector", query_embedding=query, top_k=5)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = np.argsort(-(unit @ (query / np.linalg.norm(query))))[:5]
    assert [hit.record.id for hit in hits] == [ids[i] for i in expected]
    with pytest.raises(InvalidMemoryInputError, match="shape"):
        store.add_records("alice", records[:2], embeddings=vectors[:3])


def test_an_unresolved_namespace_template_is_an_error_on_writes_and_reads(store: MemoryStore) -> None:
    """Copied AgentCore templates ({actorId}) would otherwise store and search a namespace nobody reads."""
    batch = [NewRecord(namespace=FACTS, text="fine"), NewRecord(namespace="/users/{actorId}/facts", text="bad")]
    with pytest.raises(InvalidMemoryInputError, match=r"unresolved template field \{actorId\}"):
        store.add_records("alice", batch)
    assert store.stats().records == 0  # the valid record of the batch was not written either
    store.add_record("alice", FACTS, "Alice is allergic to peanuts")
    for read in (
        lambda: store.retrieve("alice", "allergy", namespace="/users/{actor_id}/facts"),
        lambda: store.retrieve("alice", "allergy", namespace_prefix="/users/{actor_id}/"),
        lambda: store.list_records("alice", namespace="/users/{actor_id}/facts"),
    ):
        with pytest.raises(InvalidMemoryInputError, match="resolve_namespace"):
            read()
