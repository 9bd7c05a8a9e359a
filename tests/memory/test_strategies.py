"""Offline extractors and consolidation: facts, preferences, summaries, duplicates and supersession."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from agentcore.memory import (
    Event,
    ExtractedMemory,
    MemoryStore,
    MemoryStrategy,
    Role,
    SummaryExtractor,
)

pytestmark = pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)


def _event(text: str, event_id: int = 1) -> Event:
    return Event(id=event_id, actor_id="a", session_id="s", role=Role.USER, text=text, created_at=datetime.now(UTC))


def _texts(memories: Sequence[ExtractedMemory]) -> list[str]:
    return [memory.text for memory in memories]


def test_summary_keeps_the_central_sentences_in_order(store: MemoryStore) -> None:
    turns = [
        "We are planning the kitchen renovation for March.",
        "The kitchen renovation needs new cabinets and a new sink.",
        "By the way, my cousin got married last weekend.",
        "The renovation budget for the kitchen is twelve thousand euros.",
    ]
    events = [_event(text, index) for index, text in enumerate(turns)]
    (summary,) = SummaryExtractor(max_sentences=2).extract(events, lambda texts: store.embed("a", texts))
    assert "cousin" not in summary.text and "kitchen" in summary.text
    assert summary.source_event_ids == sorted(summary.source_event_ids)


def test_extract_consolidates_duplicates_and_supersedes_contradictions(store: MemoryStore) -> None:
    store.add_event("alice", "s1", "user", "I love black coffee. My favorite color is blue. I live in Lisbon.")
    store.add_event("alice", "s1", "assistant", "Noted: black coffee, blue, and Lisbon.")
    first = store.extract("alice", "s1")
    assert {r.namespace for r in first} == {
        "/users/alice/facts",
        "/users/alice/preferences",
        "/users/alice/sessions/s1/summary",
    }
    store.add_event("alice", "s2", "user", "I love black coffee!")  # a duplicate: merged, not added
    store.add_event("alice", "s2", "user", "These days I hate black coffee. My favorite color is green now.")
    store.extract("alice", "s2")
    live = {r.text for r in store.list_records("alice", namespace="/users/alice/preferences")}
    assert live == {"User hates black coffee.", "User's favorite color is green now."}
    color = store.list_records("alice", subject="favorite color")[0]
    assert [r.text for r in store.record_history("alice", color.id)] == [
        "User's favorite color is blue.",
        "User's favorite color is green now.",
    ]
    before = store.stats().records
    store.extract("alice", "s1")  # re-running an older session changes nothing: newer memories keep winning
    assert store.stats().records == before
    assert {r.text for r in store.list_records("alice", namespace="/users/alice/preferences")} == live
    hit = store.retrieve("alice", "what does alice drink?", namespace_prefix="/users/alice/", top_k=1)[0]
    assert hit.record.text == "User hates black coffee."


class KeywordExtractor:
    """A custom extractor, as an application would plug in (an LLM one has the same shape)."""

    def extract(self, events: Sequence[Event], encode: object) -> list[ExtractedMemory]:
        return [ExtractedMemory(text=f"Mentioned: {e.text}", source_event_ids=[e.id]) for e in events if "!" in e.text]


def test_custom_extractor_and_namespace_template(store: MemoryStore) -> None:
    event = store.add_event("bob", "s9", "assistant", "Your order ships tomorrow!")
    strategy = MemoryStrategy(
        "shouts", "/agents/{strategy}/{actor_id}/{session_id}", KeywordExtractor(), (Role.ASSISTANT,)
    )
    (record,) = store.extract("bob", "s9", [strategy])
    assert record.namespace == "/agents/shouts/bob/s9" and record.source_event_ids == [event.id]
    assert record.strategy == "shouts"
