"""Strategies: which events an extractor reads, and which namespace its records land in.

The defaults mirror AgentCore Memory's built-in strategies (semantic facts, user preferences, session
summaries) with offline extractors; consolidation then merges near-duplicates and lets a newer memory
on the same subject supersede the older one, keeping it in the record's history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from agentcore.memory.extractors import ExtractedMemory, Extractor, FactExtractor, PreferenceExtractor, SummaryExtractor
from agentcore.memory.models import MemoryRecord, Role
from agentcore.memory.namespaces import check_template, resolve_namespace
from agentcore.memory.rows import NewRecord
from agentcore.memory.validation import check_id

if TYPE_CHECKING:
    from agentcore.memory.store import MemoryStore

DUPLICATE_SIMILARITY = 0.92
SESSION_EVENT_LIMIT = 10_000


class Consolidator(Protocol):
    """Writes one strategy's extracted memories into its namespace; returns the records written or touched."""

    def __call__(
        self, store: MemoryStore, actor_id: str, namespace: str, strategy: str, memories: Sequence[ExtractedMemory]
    ) -> list[MemoryRecord]: ...


@dataclass(frozen=True)
class MemoryStrategy:
    """A named extraction step: ``namespace`` is a template such as ``/users/{actor_id}/preferences``.

    ``consolidator`` defaults to :func:`consolidate` (offline rules); an LLM one is in ``memory.llm``.
    """

    name: str
    namespace: str
    extractor: Extractor
    roles: tuple[Role, ...] = (Role.USER,)
    consolidator: Consolidator | None = None

    def __post_init__(self) -> None:
        check_id("strategy name", self.name)
        check_template(self.namespace)


DEFAULT_STRATEGIES: tuple[MemoryStrategy, ...] = (
    MemoryStrategy("semantic", "/users/{actor_id}/facts", FactExtractor()),
    MemoryStrategy("user_preference", "/users/{actor_id}/preferences", PreferenceExtractor()),
    MemoryStrategy(
        "summary", "/users/{actor_id}/sessions/{session_id}/summary", SummaryExtractor(), (Role.USER, Role.ASSISTANT)
    ),
)


def run_strategies(
    store: MemoryStore, actor_id: str, session_id: str, strategies: Sequence[MemoryStrategy]
) -> list[MemoryRecord]:
    """Extract and consolidate each strategy's memories from one session; returns the records written.

    Every strategy extracts before any writes, so an extractor that fails (an LLM that does not answer) leaves
    the store as it was; the events stay and the call can be repeated.
    """
    events = store.list_events(actor_id, session_id, limit=SESSION_EVENT_LIMIT)
    extracted = []
    for strategy in strategies:
        selected = [event for event in events if event.role in strategy.roles]
        memories = strategy.extractor.extract(selected, lambda texts: store.embed(actor_id, texts))
        namespace = resolve_namespace(
            strategy.namespace, actor_id=actor_id, session_id=session_id, strategy=strategy.name
        )
        extracted.append((strategy, namespace, memories))
    written: list[MemoryRecord] = []
    for strategy, namespace, memories in extracted:
        write = strategy.consolidator or consolidate
        written.extend(write(store, actor_id, namespace, strategy.name, memories))
    return written


def consolidate(
    store: MemoryStore, actor_id: str, namespace: str, strategy: str, memories: Sequence[ExtractedMemory]
) -> list[MemoryRecord]:
    """Write ``memories`` into ``namespace``: merge near-duplicates, supersede same-subject records."""
    if not memories:
        return []
    vectors = store.embed(actor_id, [memory.text for memory in memories])
    written: list[MemoryRecord] = []
    for memory, vector in zip(memories, vectors, strict=True):
        duplicate = _near_duplicate(store, actor_id, namespace, memory, vector)
        if duplicate is not None:
            sources = sorted(set(duplicate.source_event_ids) | set(memory.source_event_ids))
            written.append(store.update_record(actor_id, duplicate.id, source_event_ids=sources))
            continue
        new = NewRecord(
            namespace=namespace,
            text=memory.text,
            strategy=strategy,
            subject=memory.subject,
            metadata=memory.metadata,
            source_event_ids=memory.source_event_ids,
        )
        new_id = store.add_records(actor_id, [new], embeddings=vector[None, :])[0]
        if memory.subject is not None:
            _supersede_same_subject(store, actor_id, namespace, strategy, memory, new_id)
        written.append(store.get_record(actor_id, new_id))
    return written


def _supersede_same_subject(
    store: MemoryStore, actor_id: str, namespace: str, strategy: str, memory: ExtractedMemory, new_id: int
) -> None:
    """The memory from the later events wins, whatever order sessions are processed in."""
    newest_source = max(memory.source_event_ids, default=0)
    for old in store.list_records(actor_id, namespace=namespace, subject=memory.subject):
        if old.id == new_id or old.strategy != strategy:
            continue
        if max(old.source_event_ids, default=0) > newest_source:
            store.supersede_record(actor_id, new_id, old.id)
            return
        store.supersede_record(actor_id, old.id, new_id)


def _near_duplicate(
    store: MemoryStore, actor_id: str, namespace: str, memory: ExtractedMemory, vector: np.ndarray
) -> MemoryRecord | None:
    """A record (live or superseded) saying the same thing: same subject and polarity, cosine >= 0.92."""
    best = store.retrieve(
        actor_id,
        memory.text,
        namespace=namespace,
        top_k=1,
        mode="vector",
        query_embedding=vector,
        include_superseded=True,
    )
    if not best or (best[0].similarity or 0.0) < DUPLICATE_SIMILARITY:
        return None
    record = best[0].record
    same_subject = record.subject == memory.subject
    same_polarity = record.metadata.get("polarity") == memory.metadata.get("polarity")
    return record if same_subject and same_polarity else None
