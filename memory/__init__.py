"""agentcore.memory: per-actor events and long-term records with hybrid retrieval, in SQLite or PostgreSQL."""

from agentcore.memory.aio import AsyncMemoryStore
from agentcore.memory.errors import (
    InvalidMemoryInputError,
    MemoryExtractionError,
    MemoryNotFoundError,
    MemoryStoreError,
    SchemaVersionError,
)
from agentcore.memory.extractors import (
    ExtractedMemory,
    Extractor,
    FactExtractor,
    PreferenceExtractor,
    SummaryExtractor,
)
from agentcore.memory.llm import LLMConsolidator, LLMExtractor, llm_strategies
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
from agentcore.memory.strategies import DEFAULT_STRATEGIES, Consolidator, MemoryStrategy, consolidate

MemoryEvent = Event  # the name `agentcore` re-exports, where a bare "Event" would be ambiguous

__all__ = [
    "DEFAULT_STRATEGIES",
    "AsyncMemoryStore",
    "Consolidator",
    "Event",
    "ExtractedMemory",
    "Extractor",
    "FactExtractor",
    "ForgetReport",
    "InvalidMemoryInputError",
    "LLMConsolidator",
    "LLMExtractor",
    "MemoryEvent",
    "MemoryExtractionError",
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
    "llm_strategies",
    "resolve_namespace",
]
