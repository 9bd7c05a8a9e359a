"""The pydantic models the store returns: frozen copies, never live database rows."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    """Who produced an event."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"
    OTHER = "other"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Event(_Frozen):
    """One immutable turn or action of a session."""

    id: int
    actor_id: str
    session_id: str
    role: Role
    text: str
    payload: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    branch: str | None = None
    created_at: datetime
    expires_at: datetime | None = None


class MemoryRecord(_Frozen):
    """A long-term memory: a fact, a preference, a summary, or anything an application stores."""

    id: int
    actor_id: str
    namespace: str
    strategy: str
    text: str
    subject: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    source_event_ids: list[int] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    superseded_by: int | None = None


class ScoredEvent(_Frozen):
    """An event found by :meth:`MemoryStore.search_events`; see :class:`ScoredRecord` for the scores."""

    event: Event
    score: float
    similarity: float | None = None


class ScoredRecord(_Frozen):
    """A retrieved record: ``score`` ranks (fused RRF), ``similarity`` is the cosine to the query."""

    record: MemoryRecord
    score: float
    similarity: float | None = None


class ForgetReport(_Frozen):
    actor_id: str
    tenant: str | None  # None: the actor was erased in every tenant
    events: int
    records: int
    sessions: int


class PurgeReport(_Frozen):
    events: int
    records: int


class MemoryStats(_Frozen):
    """Counts of one tenant for operators; ``expired_*`` are still on disk until :meth:`MemoryStore.purge`."""

    backend: str
    tenant: str
    schema_version: int
    actors: int
    sessions: int
    events: int
    records: int
    superseded_records: int
    expired_events: int
    expired_records: int
    unindexed_events: int
