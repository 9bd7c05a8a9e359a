"""agentcore.memory: per-actor events and long-term records with hybrid retrieval, in SQLite or PostgreSQL."""

from agentcore.memory.aio import AsyncMemoryStore
from agentcore.memory.errors import InvalidMemoryInputError, MemoryNotFoundError, MemoryStoreError, SchemaVersionError
from agentcore.memory.extractors import (
    ExtractedMemory,
    Extractor,
    FactExtractor,
    PreferenceExtractor,
    SummaryExtractor,
)
from agentcore.memory.models import (
    Event,
    ForgetReport,
    MemoryRecord,
    MemoryStats,
    PurgeReport,
    Role,
    ScoredEvent,
    ScoredRecord,
)
from agentcore.memory.namespaces import resolve_namespace
from agentcore.memory.rows import NewEvent, NewRecord
from agentcore.memory.store import MemoryStore
from agentcore.memory.strategies import DEFAULT_STRATEGIES, MemoryStrategy, consolidate

MemoryEvent = Event  # the name `agentcore` re-exports, where a bare "Event" would be ambiguous

__all__ = [
    "DEFAULT_STRATEGIES",
    "AsyncMemoryStore",
    "Event",
    "ExtractedMemory",
    "Extractor",
    "FactExtractor",
    "ForgetReport",
    "InvalidMemoryInputError",
    "MemoryEvent",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryStats",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryStrategy",
    "NewEvent",
    "NewRecord",
    "PreferenceExtractor",
    "PurgeReport",
    "Role",
    "SchemaVersionError",
    "ScoredEvent",
    "ScoredRecord",
    "SummaryExtractor",
    "consolidate",
    "resolve_namespace",
]
