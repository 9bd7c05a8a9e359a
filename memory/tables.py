"""The sqlmodel tables of agentcore.memory (all prefixed ``memory_`` so they share the agentcore database).

Times are aware UTC (sqlmodel stores UTC and returns aware values); embeddings are little-endian float32
BLOBs (``bytea`` on PostgreSQL).
Full-text indexes are not declared here: they are backend-specific and created by the migrations.
Every row keyed by an actor is keyed by its tenant first (schema version 8): an actor id is unique within a tenant.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import JSON, Column, Index, LargeBinary, Table, Text
from sqlmodel import Field, SQLModel

EVENTS_INDEX = "ix_memory_events_tenant_actor_session"
RECORDS_INDEX = "ix_memory_records_tenant_actor_namespace"


class SchemaVersionRow(SQLModel, table=True):
    """One row per applied migration; the highest version is the database's schema version."""

    __tablename__ = "memory_schema_version"

    version: int = Field(primary_key=True)
    description: str
    applied_at: datetime


class ActorRow(SQLModel, table=True):
    __tablename__ = "memory_actors"

    tenant: str = Field(primary_key=True, max_length=255)
    actor_id: str = Field(primary_key=True, max_length=255)
    created_at: datetime


class SessionRow(SQLModel, table=True):
    __tablename__ = "memory_sessions"

    tenant: str = Field(primary_key=True, max_length=255)
    actor_id: str = Field(primary_key=True, max_length=255)
    session_id: str = Field(primary_key=True, max_length=255)
    created_at: datetime
    last_event_at: datetime


class EventRow(SQLModel, table=True):
    """An immutable conversation event; ``embedding`` is filled lazily, in batches, by the first search."""

    __tablename__ = "memory_events"
    __table_args__ = (Index(EVENTS_INDEX, "tenant", "actor_id", "session_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=255)
    actor_id: str = Field(max_length=255)
    session_id: str = Field(max_length=255)
    role: str = Field(max_length=32)
    text: str = Field(sa_column=Column(Text, nullable=False))
    payload: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column("metadata", JSON, nullable=False))
    branch: str | None = Field(default=None, max_length=255)
    created_at: datetime
    expires_at: datetime | None = Field(default=None, index=True)
    embedding: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))


class RecordRow(SQLModel, table=True):
    """A long-term memory record; superseded records keep their row and point at their successor."""

    __tablename__ = "memory_records"
    __table_args__ = (Index(RECORDS_INDEX, "tenant", "actor_id", "namespace"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(max_length=255)
    actor_id: str = Field(max_length=255)
    namespace: str = Field(max_length=1024)
    strategy: str = Field(max_length=64)
    text: str = Field(sa_column=Column(Text, nullable=False))
    subject: str | None = Field(default=None, max_length=255)
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column("metadata", JSON, nullable=False))
    source_event_ids: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = Field(default=None, index=True)
    superseded_by: int | None = Field(default=None)
    embedding: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


def _table(model: type[SQLModel]) -> Table:
    return cast(Table, model.__table__)  # type: ignore[attr-defined]  # set by sqlmodel's metaclass


SCHEMA_VERSIONS = _table(SchemaVersionRow)
ACTORS = _table(ActorRow)
SESSIONS = _table(SessionRow)
EVENTS = _table(EventRow)
RECORDS = _table(RecordRow)
MEMORY_TABLES = [SCHEMA_VERSIONS, ACTORS, SESSIONS, EVENTS, RECORDS]
