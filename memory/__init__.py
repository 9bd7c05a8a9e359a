"""agentcore.memory: per-actor events and long-term records with hybrid retrieval, in SQLite or PostgreSQL."""

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
from agentcore.memory.store import MemoryStore, NewRecord
from agentcore.memory.strategies import DEFAULT_STRATEGIES, MemoryStrategy, consolidate

__all__ = [
    "DEFAULT_STRATEGIES",
    "Event",
    "ExtractedMemory",
    "Extractor",
    "FactExtractor",
    "ForgetReport",
    "InvalidMemoryInputError",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryStats",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryStrategy",
    "NewRecord",
    "PreferenceExtractor",
    "PurgeReport",
    "Role",
    "ScoredEvent",
    "ScoredRecord",
    "SchemaVersionError",
    "SummaryExtractor",
    "consolidate",
    "resolve_namespace",
]
