"""Events on both backends: append, list, last turns, TTL and purge, hybrid event search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcore.memory import InvalidMemoryInputError, MemoryNotFoundError, MemoryStore, Role

pytestmark = pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)


def test_events_round_trip_in_order_with_payload_metadata_and_branch(store: MemoryStore) -> None:
    first = store.add_event("alice", "s1", "user", "Book me a table for two", metadata={"channel": "web"})
    second = store.add_event(
        "alice",
        "s1",
        Role.TOOL,
        "reservation made",
        payload={"tool": "book", "args": {"party": 2}, "result": {"ok": True}},
        branch="retry-1",
    )
    store.add_event("alice", "s2", "user", "another session")
    events = store.list_events("alice", "s1")
    assert [event.id for event in events] == [first.id, second.id]
    assert events[0].metadata == {"channel": "web"} and events[0].role is Role.USER
    assert events[1].payload == {"tool": "book", "args": {"party": 2}, "result": {"ok": True}}
    assert store.list_events("alice", "s1", branch="retry-1") == [events[1]]
    assert store.list_events("alice", "s1", after_id=first.id) == [events[1]]
    assert store.get_event("alice", first.id) == events[0]
    assert events[0].created_at.tzinfo is not None
    assert sorted(store.list_sessions("alice")) == ["s1", "s2"]


def test_last_turns_are_the_newest_k_oldest_first(store: MemoryStore) -> None:
    for index in range(6):
        store.add_event("alice", "s1", "user" if index % 2 == 0 else "assistant", f"turn {index}")
    assert [event.text for event in store.last_turns("alice", "s1", 3)] == ["turn 3", "turn 4", "turn 5"]


def test_expired_events_are_invisible_and_purged(store: MemoryStore) -> None:
    past = datetime.now(UTC) - timedelta(hours=2)
    old = store.add_event("alice", "s1", "user", "my locker code is 4512", created_at=past, ttl=timedelta(hours=1))
    keep = store.add_event("alice", "s1", "user", "my locker is number 12", ttl=timedelta(days=1))
    assert [event.id for event in store.list_events("alice", "s1")] == [keep.id]
    assert all(hit.event.id != old.id for hit in store.search_events("alice", "locker code 4512"))
    with pytest.raises(MemoryNotFoundError):
        store.get_event("alice", old.id)
    assert store.stats().expired_events == 1
    report = store.purge()
    assert (report.events, report.records) == (1, 0)
    assert store.stats().events == 1 and store.stats().expired_events == 0


def test_search_events_ranks_the_relevant_turn_first_in_every_mode(store: MemoryStore) -> None:
    texts = [
        "I adopted a golden retriever puppy named Biscuit last week",
        "The quarterly report is due on Friday",
        "We should repaint the kitchen a pale green",
        "My sister is visiting from Toronto in June",
    ]
    ids = [store.add_event("alice", "s1", "user", text).id for text in texts]
    store.add_event("bob", "s1", "user", "My puppy Biscuit is a golden retriever too")
    for mode in ("hybrid", "vector", "fulltext"):
        hits = store.search_events("alice", "what is the name of my dog?" if mode != "fulltext" else "puppy", mode=mode)
        assert hits[0].event.id == ids[0], mode
        assert {hit.event.actor_id for hit in hits} == {"alice"}
    assert store.stats().unindexed_events == 1  # only bob's event: searching alice embeds alice's alone
    assert store.search_events("alice", "puppy", session_id="other") == []


def test_bad_event_input_is_rejected_with_a_clear_error(store: MemoryStore) -> None:
    with pytest.raises(InvalidMemoryInputError, match="role 'robot'"):
        store.add_event("alice", "s1", "robot", "hi")
    with pytest.raises(InvalidMemoryInputError, match="empty"):
        store.add_event("alice", "s1", "user", "   ")
    with pytest.raises(InvalidMemoryInputError, match="ttl"):
        store.add_event("alice", "s1", "user", "hi", ttl=timedelta(seconds=-1))
    with pytest.raises(InvalidMemoryInputError, match="JSON"):
        store.add_event("alice", "s1", "user", "hi", payload={"x": float("nan")})
    with pytest.raises(InvalidMemoryInputError, match="top_k"):
        store.search_events("alice", "hi", top_k=0)
    assert store.stats().events == 0


def test_recency_weighting_prefers_the_newer_of_equal_matches(store: MemoryStore) -> None:
    old = store.add_event(
        "alice", "s1", "user", "my gym is on Baker Street", created_at=datetime.now(UTC) - timedelta(days=60)
    )
    new = store.add_event("alice", "s2", "user", "my gym is on Baker Street")
    assert [hit.event.id for hit in store.search_events("alice", "where is my gym?")] == [old.id, new.id]
    recent = store.search_events("alice", "where is my gym?", recency_half_life=timedelta(days=7))
    assert [hit.event.id for hit in recent] == [new.id, old.id]
    assert recent[0].score > recent[1].score
