"""Errors of agentcore.memory; every one derives from :class:`agentcore.errors.AgentCoreError`."""

from __future__ import annotations

from agentcore.errors import AgentCoreError


class MemoryStoreError(AgentCoreError):
    """A memory operation failed."""


class InvalidMemoryInputError(MemoryStoreError, ValueError):
    """An id, namespace, text, metadata value or filter was rejected before touching the database."""


class MemoryNotFoundError(MemoryStoreError, LookupError):
    """The event or record does not exist for this actor (or has expired)."""


class SchemaVersionError(MemoryStoreError):
    """The database was written by a newer agentcore than this one; upgrade agentcore to open it."""


class MemoryExtractionError(MemoryStoreError):
    """A strategy's extractor or consolidator could not produce memories (e.g. the LLM gave no usable answer).

    Raised before the strategy writes anything: the session's events are kept, so extraction can be retried.
    """
