"""MemoryStore: per-actor events and long-term records in one SQL database, with hybrid retrieval.

Every public method takes the ``actor_id`` first and every statement filters on it and on the store's ``tenant``
(an actor id is unique within a tenant only), so isolation does not depend on namespaces or on callers
remembering a filter. Embeddings go through one :class:`~agentcore.accel.runtime.Accelerator`, charged to
``tenant`` and the actor.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Engine,
    Select,
    Table,
    and_,
    bindparam,
    delete,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, RowMapping

from agentcore.accel.telemetry import record_retrieval
from agentcore.config import as_url, database_url
from agentcore.memory import search
from agentcore.memory.database import create_memory_engine, run_write, utcnow
from agentcore.memory.errors import InvalidMemoryInputError, MemoryNotFoundError
from agentcore.memory.filters import Predicate, compile_filters
from agentcore.memory.fulltext import FULLTEXT_TABLES
from agentcore.memory.migrations import migrate, schema_version
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
from agentcore.memory.parallel import SideConnections
from agentcore.memory.pgvector import COLUMN as VECTOR_COLUMN
from agentcore.memory.pgvector import InDatabase, vector_table
from agentcore.memory.pgvector import build_indexes as build_pgvector_indexes
from agentcore.memory.pgvector import drop_indexes as drop_pgvector_indexes
from agentcore.memory.pgvector import enable as enable_pgvector
from agentcore.memory.pgvector import has_column as has_vector_column
from agentcore.memory.pgvector import nearest as pgvector_nearest
from agentcore.memory.rows import (
    NewEvent,
    NewRecord,
    event_from_row,
    expiry,
    insert_many,
    record_from_row,
    unit_rows,
    utc,
)
from agentcore.memory.search import Scope, SearchMode
from agentcore.memory.tables import ACTORS, EVENTS, RECORDS, SESSIONS
from agentcore.memory.validation import (
    DEFAULT_DIMENSION,
    DEFAULT_MAX_TEXT_CHARS,
    check_id,
    check_json,
    check_metadata,
    check_namespace,
    check_positive,
    check_score,
    check_tenant,
    check_text,
    check_top_k,
)
from agentcore.memory.vectors import DEFAULT_CACHE_BYTES, VERSIONS_TABLE, ActorMatrixCache, Nominator

if TYPE_CHECKING:
    from agentcore.accel.runtime import Accelerator
    from agentcore.memory.strategies import MemoryStrategy

log = logging.getLogger(__name__)

EMBED_BATCH = 256
# Vector nominations tried before reading every row of the actor, as multiples of the rows a ranking needs
# (see _candidates).
NOMINATION_FACTORS = (2, 16)
# pgvector nominates in scope, so its margin only covers HNSW's approximation: a fused ranking weighs vector rank r
# by 1 / (5 + r), and nominating the RANK_DEPTH rows it reads (ef_search 200, not 400) left the top 10 of all 100
# heavy-actor benchmark queries unchanged (docs/memory.md). A plain vector query keeps the margin (recall@10).
PGVECTOR_FUSED_FACTORS = (1, 16)


# A full-text ranking, or the future of one running on a side connection (see memory/parallel.py).
Ranking = list[int] | Future[list[int]] | None


def _ranked(ranking: Ranking) -> list[int] | None:
    return ranking.result() if isinstance(ranking, Future) else ranking


@cache
def _fetch_query(table: Table) -> Select[Any]:
    """The live rows of ``table`` with ids ``:ids`` of one tenant's actor, built once (see :func:`search.reused`); the
    embedding is left out: no model holds it."""
    live = or_(table.c.expires_at.is_(None), table.c.expires_at > bindparam(search.NOW_PARAM, required=True))
    columns = [column for column in table.c if column.name != "embedding"]
    ids = table.c.id.in_(bindparam("ids", expanding=True))
    return select(*columns).where(search.actor_for_ids(table), ids, live)


class MemoryStore:
    """Per-actor short-term events and long-term records, with hybrid (BM25 + vector) retrieval.

    ``url`` is any SQLAlchemy URL or a SQLite path (default: :func:`agentcore.config.database_url`); or pass
    an ``engine``. The schema is created or migrated on open. ``tenant`` (canonical, see :func:`check_tenant`)
    scopes every row the store reads, writes, counts and forgets: two stores of different tenants on one database
    never see each other's actors, whatever their ids. ``fulltext_match_cap``: an actor's full-text
    ranking scores at most its newest this-many matches (``None``: all; see docs/memory.md, heavy actors).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        engine: Engine | None = None,
        accelerator: Accelerator | None = None,
        tenant: str = "default",
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        sqlite_synchronous: str = "FULL",
        dimension: int = DEFAULT_DIMENSION,
        pgvector: bool | None = None,
        vector_cache_bytes: int = DEFAULT_CACHE_BYTES,
        fulltext_match_cap: int | None = search.FULLTEXT_MATCH_CAP,
    ) -> None:
        if engine is not None and url is not None:
            raise InvalidMemoryInputError("pass url or engine, not both")
        tenant = check_tenant(tenant)
        self.fulltext_match_cap = fulltext_match_cap
        if fulltext_match_cap is not None:  # None: score every match
            check_positive("fulltext_match_cap", fulltext_match_cap)
        check_positive("dimension", dimension)
        self.engine = engine or create_memory_engine(
            as_url(url, Path.cwd()) if url else database_url(), synchronous=sqlite_synchronous
        )
        self.tenant = tenant
        self.max_text_chars = max_text_chars
        self.dimension = dimension
        self._accelerator = accelerator
        self.schema_version = migrate(self.engine)
        self.pgvector = False
        self._vector_copies = False  # the tables have embedding_vec: every embedding written sets it (or NULL)
        self._nominator: Nominator | None = None  # SQLite's; with pgvector the HNSW index nominates
        self._side: SideConnections | None = None
        if self.engine.dialect.name == "postgresql":
            if pgvector is not False:
                self.pgvector = enable_pgvector(self.engine, dimension, required=pgvector is True)
            self._vector_copies = self.pgvector or has_vector_column(self.engine)
            self._side = SideConnections(self.engine) if self.pgvector else None
        elif pgvector:
            raise InvalidMemoryInputError("pgvector=True needs a PostgreSQL database")
        else:
            self._nominator = ActorMatrixCache(vector_cache_bytes)

    # -- lifecycle -------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
        self.engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def accelerator(self) -> Accelerator:
        """The encoder door; created on first use so that event writes never load the model."""
        if self._accelerator is None:
            from agentcore.accel.runtime import Accelerator

            self._accelerator = Accelerator()
        return self._accelerator

    def embed(self, actor_id: str, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 embeddings of ``texts``, charged to this store's tenant and ``actor_id``."""
        return self.accelerator.embed(list(texts), tenant=self.tenant, user=actor_id).vectors

    # -- events ----------------------------------------------------------------------------------------

    def add_event(
        self,
        actor_id: str,
        session_id: str,
        role: Role | str,
        text: str,
        *,
        payload: Any = None,
        metadata: Mapping[str, Any] | None = None,
        branch: str | None = None,
        ttl: timedelta | None = None,
        expires_at: datetime | None = None,
        created_at: datetime | None = None,
    ) -> Event:
        """Append an immutable event; it is durable when this returns (embedded later, on first search)."""
        start = utc(created_at) or utcnow()
        new = NewEvent(
            role=role,
            text=text,
            payload=payload,
            metadata=dict(metadata or {}),
            branch=branch,
            created_at=start,
            expires_at=expiry(start, ttl, expires_at),
        )
        return self.add_events(actor_id, session_id, [new])[0]

    def add_events(self, actor_id: str, session_id: str, events: Sequence[NewEvent]) -> list[Event]:
        """Append many events of one session in one transaction (all or none), e.g. to import a history."""
        check_id("actor_id", actor_id)
        check_id("session_id", session_id)
        now = utcnow()
        rows = [self._event_row(actor_id, session_id, new, now) for new in events]
        if not rows:
            return []

        def work(connection: Connection) -> list[int]:
            self._touch_session(connection, actor_id, session_id, now)
            return insert_many(connection, EVENTS, rows)

        ids = run_write(self.engine, work)
        return [Event(id=event_id, **row) for event_id, row in zip(ids, rows, strict=True)]

    def add_events_bulk(self, actor_id: str, session_id: str, events: Sequence[NewEvent]) -> list[Event]:
        """Append many events and embed them now, for large imports.

        The embeddings run through this store's Accelerator in batches, so a store given
        ``Accelerator(backend="ray")`` (or configured with ``[accel] backend = "ray"``) spreads them over the
        cluster; searches then find them without embedding anything.
        """
        added = self.add_events(actor_id, session_id, events)
        self.index_events(actor_id)
        return added

    def _event_row(self, actor_id: str, session_id: str, new: NewEvent, now: datetime) -> dict[str, Any]:
        if new.branch is not None:
            check_id("branch", new.branch)
        try:
            role = Role(new.role)
        except ValueError:
            raise InvalidMemoryInputError(f"role {new.role!r} is not one of {', '.join(Role)}") from None
        return {
            "tenant": self.tenant,
            "actor_id": actor_id,
            "session_id": session_id,
            "role": role.value,
            "text": check_text("event text", new.text, self.max_text_chars),
            "payload": None if new.payload is None else check_json("payload", new.payload),
            "metadata": check_metadata(new.metadata),
            "branch": new.branch,
            "created_at": utc(new.created_at) or now,
            "expires_at": utc(new.expires_at),
        }

    def _touch_session(self, connection: Connection, actor_id: str, session_id: str, now: datetime) -> None:
        dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
        self._touch_actor(connection, actor_id, now)
        connection.execute(
            dialect.insert(SESSIONS)
            .values(tenant=self.tenant, actor_id=actor_id, session_id=session_id, created_at=now, last_event_at=now)
            .on_conflict_do_update(index_elements=["tenant", "actor_id", "session_id"], set_={"last_event_at": now})
        )

    def _touch_actor(self, connection: Connection, actor_id: str, now: datetime) -> None:
        dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
        values = {"tenant": self.tenant, "actor_id": actor_id, "created_at": now}
        connection.execute(dialect.insert(ACTORS).values(**values).on_conflict_do_nothing())

    def _owned(self, table: Any, actor_id: str) -> ColumnElement[bool]:
        """The rows of ``actor_id`` in this store's tenant: every statement on an actor's rows starts here."""
        return and_(table.c.tenant == self.tenant, table.c.actor_id == actor_id)

    def get_event(self, actor_id: str, event_id: int) -> Event:
        check_id("actor_id", actor_id)
        with self.engine.connect() as connection:
            row = connection.execute(
                select(EVENTS).where(self._owned(EVENTS, actor_id), EVENTS.c.id == event_id, self._live(EVENTS))
            ).first()
        if row is None:
            raise MemoryNotFoundError(f"event {event_id} does not exist for actor {actor_id!r} (or has expired)")
        return event_from_row(row._mapping)

    def list_events(
        self,
        actor_id: str,
        session_id: str,
        *,
        limit: int = 100,
        after_id: int | None = None,
        branch: str | None = None,
        newest_first: bool = False,
    ) -> list[Event]:
        """Events of one session in order (``after_id`` pages forward); expired events are never listed."""
        check_id("actor_id", actor_id)
        check_id("session_id", session_id)
        check_positive("limit", limit)
        query = select(EVENTS).where(
            self._owned(EVENTS, actor_id), EVENTS.c.session_id == session_id, self._live(EVENTS)
        )
        if after_id is not None:
            query = query.where(EVENTS.c.id > after_id)
        if branch is not None:
            query = query.where(EVENTS.c.branch == branch)
        query = query.order_by(EVENTS.c.id.desc() if newest_first else EVENTS.c.id).limit(limit)
        with self.engine.connect() as connection:
            return [event_from_row(row._mapping) for row in connection.execute(query)]

    def last_turns(self, actor_id: str, session_id: str, k: int = 5) -> list[Event]:
        """The ``k`` most recent events of a session, oldest first (ready to put into a prompt)."""
        return list(reversed(self.list_events(actor_id, session_id, limit=k, newest_first=True)))

    def list_sessions(self, actor_id: str) -> list[str]:
        check_id("actor_id", actor_id)
        query = select(SESSIONS.c.session_id).where(self._owned(SESSIONS, actor_id)).order_by(SESSIONS.c.created_at)
        with self.engine.connect() as connection:
            return list(connection.execute(query).scalars())

    def index_events(self, actor_id: str) -> int:
        """Embed the actor's events that have no embedding yet (in batches); returns how many."""
        check_id("actor_id", actor_id)
        with self.engine.connect() as connection:
            pending = connection.execute(
                select(EVENTS.c.id, EVENTS.c.text).where(self._owned(EVENTS, actor_id), EVENTS.c.embedding.is_(None))
            ).all()
        for start in range(0, len(pending), EMBED_BATCH):
            chunk = pending[start : start + EMBED_BATCH]
            vectors = self.embed(actor_id, [row.text for row in chunk])

            params = [
                {"row_id": row.id, "vector": blob, "vec": blob}
                for row, blob in zip(chunk, self._blobs(vectors, len(chunk)), strict=True)
            ]

            def work(connection: Connection, params: list[dict[str, Any]] = params) -> None:
                table = self._writable(EVENTS)
                values: dict[str, Any] = {"embedding": bindparam("vector")}
                if self._vector_copies:
                    values[VECTOR_COLUMN] = bindparam("vec") if self.pgvector else None
                statement = (
                    update(table)
                    .where(table.c.id == bindparam("row_id"), self._owned(table, actor_id))
                    .values(**values)
                )
                connection.execute(statement, params)

            run_write(self.engine, work)
        return len(pending)

    def search_events(
        self,
        actor_id: str,
        query: str,
        *,
        session_id: str | None = None,
        top_k: int = 10,
        mode: SearchMode = "hybrid",
        min_score: float | None = None,
        recency_half_life: timedelta | None = None,
        query_embedding: np.ndarray | None = None,
        session_context: bool = True,
    ) -> list[ScoredEvent]:
        """The actor's events ranked by hybrid retrieval (``mode`` picks BM25-only or vector-only).

        ``session_context`` (hybrid only): rerank the best events with their neighbouring turns and sessions.
        """
        check_id("actor_id", actor_id)
        if session_id is not None:
            check_id("session_id", session_id)
        self.index_events(actor_id)
        scope = Scope(EVENTS, actor_id, utcnow(), tenant=self.tenant)
        if session_id is not None:
            scope.narrow(
                "session", EVENTS.c.session_id == bindparam("session_id", required=True), session_id=session_id
            )
        context = session_context and mode == "hybrid"
        hits, rows = self._search(
            scope, query, top_k, mode, min_score, recency_half_life, None, query_embedding, context
        )
        return [ScoredEvent(event=event_from_row(rows[h.id]), score=h.score, similarity=h.similarity) for h in hits]

    # -- records ---------------------------------------------------------------------------------------

    def add_record(
        self,
        actor_id: str,
        namespace: str,
        text: str,
        *,
        strategy: str = "custom",
        subject: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_event_ids: Sequence[int] = (),
        ttl: timedelta | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryRecord:
        """Store one long-term record (embedded now, so it is retrievable at once)."""
        new = NewRecord(
            namespace=namespace,
            text=text,
            strategy=strategy,
            subject=subject,
            metadata=dict(metadata or {}),
            source_event_ids=list(source_event_ids),
            expires_at=expiry(utcnow(), ttl, expires_at),
        )
        return record_from_row(self._insert_records(actor_id, [new], None)[0])

    def add_records(
        self, actor_id: str, records: Sequence[NewRecord], *, embeddings: np.ndarray | None = None
    ) -> list[int]:
        """Store many records in one transaction; ``embeddings`` (``[n, d]``) skips the encoder."""
        return [row["id"] for row in self._insert_records(actor_id, records, embeddings)] if records else []

    def _insert_records(
        self, actor_id: str, records: Sequence[NewRecord], embeddings: np.ndarray | None
    ) -> list[dict[str, Any]]:
        check_id("actor_id", actor_id)
        for record in records:
            check_namespace(record.namespace)
            check_text("record text", record.text, self.max_text_chars)
            check_id("strategy", record.strategy)
            if record.subject is not None:
                check_id("subject", record.subject)
            check_metadata(record.metadata)
        vectors = self.embed(actor_id, [r.text for r in records]) if embeddings is None else embeddings
        blobs = self._blobs(vectors, len(records))
        now = utcnow()
        rows: list[dict[str, Any]] = [
            {
                "tenant": self.tenant,
                "actor_id": actor_id,
                "namespace": record.namespace,
                "strategy": record.strategy,
                "text": record.text,
                "subject": record.subject,
                "metadata": record.metadata,
                "source_event_ids": record.source_event_ids,
                "created_at": now,
                "updated_at": now,
                "expires_at": utc(record.expires_at),
                "superseded_by": None,
                "embedding": blob,
            }
            | ({VECTOR_COLUMN: blob} if self.pgvector else {})
            for record, blob in zip(records, blobs, strict=True)
        ]

        def work(connection: Connection) -> list[int]:
            self._touch_actor(connection, actor_id, now)
            return insert_many(connection, self._writable(RECORDS), rows)

        for row, record_id in zip(rows, run_write(self.engine, work), strict=True):
            row["id"] = record_id
        return rows

    def get_record(self, actor_id: str, record_id: int) -> MemoryRecord:
        check_id("actor_id", actor_id)
        with self.engine.connect() as connection:
            rows = self._fetch(connection, RECORDS, self.tenant, actor_id, [record_id])
        if record_id not in rows:
            raise MemoryNotFoundError(f"record {record_id} does not exist for actor {actor_id!r} (or has expired)")
        return record_from_row(rows[record_id])

    def list_records(
        self,
        actor_id: str,
        *,
        namespace: str | None = None,
        namespace_prefix: str | None = None,
        subject: str | None = None,
        include_superseded: bool = False,
        limit: int = 1000,
    ) -> list[MemoryRecord]:
        """The actor's live records, oldest first, optionally within one namespace (or under a prefix)."""
        check_id("actor_id", actor_id)
        check_positive("limit", limit)  # SQLite reads a negative LIMIT as none
        query = select(RECORDS).where(self._owned(RECORDS, actor_id), self._live(RECORDS))
        params: dict[str, Any] = {}
        if namespace is not None or namespace_prefix is not None:
            _, condition, params = self._namespace_condition(namespace, namespace_prefix)
            query = query.where(condition)
        if subject is not None:
            query = query.where(RECORDS.c.subject == subject)
        if not include_superseded:
            query = query.where(RECORDS.c.superseded_by.is_(None))
        with self.engine.connect() as connection:
            rows = connection.execute(query.order_by(RECORDS.c.id).limit(limit), params)
            return [record_from_row(row._mapping) for row in rows]

    def update_record(
        self,
        actor_id: str,
        record_id: int,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_event_ids: Sequence[int] | None = None,
        ttl: timedelta | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryRecord:
        """Change a record in place (re-embedding a new text); to keep history use supersede_record."""
        check_id("actor_id", actor_id)
        now = utcnow()
        values: dict[str, Any] = {"updated_at": now}
        if text is not None:
            values["text"] = check_text("record text", text, self.max_text_chars)
            values["embedding"] = self._blobs(self.embed(actor_id, [text]), 1)[0]
            if self._vector_copies:  # without pgvector: no copy, rather than the old text's (scored from the bytea)
                values[VECTOR_COLUMN] = values["embedding"] if self.pgvector else None
        if metadata is not None:
            values["metadata"] = check_metadata(metadata)
        if source_event_ids is not None:
            values["source_event_ids"] = list(source_event_ids)
        if ttl is not None or expires_at is not None:
            values["expires_at"] = expiry(now, ttl, expires_at)

        def work(connection: Connection) -> int:
            table = self._writable(RECORDS)
            statement = update(table).where(table.c.id == record_id, self._owned(table, actor_id), self._live(table))
            return connection.execute(statement.values(**values)).rowcount

        if run_write(self.engine, work) == 0:
            raise MemoryNotFoundError(f"record {record_id} does not exist for actor {actor_id!r} (or has expired)")
        return self.get_record(actor_id, record_id)

    def supersede_record(self, actor_id: str, old_id: int, new_id: int) -> None:
        """Mark ``old_id`` as replaced by ``new_id``: hidden from retrieval, kept for record_history."""
        check_id("actor_id", actor_id)
        if old_id == new_id:
            raise InvalidMemoryInputError(f"record {old_id} cannot supersede itself")
        self.get_record(actor_id, new_id)

        def work(connection: Connection) -> int:
            statement = update(RECORDS).where(RECORDS.c.id == old_id, self._owned(RECORDS, actor_id))
            return connection.execute(statement.values(superseded_by=new_id, updated_at=utcnow())).rowcount

        if run_write(self.engine, work) == 0:
            raise MemoryNotFoundError(f"record {old_id} does not exist for actor {actor_id!r}")

    def record_history(self, actor_id: str, record_id: int) -> list[MemoryRecord]:
        """The chain of records that ``record_id`` superseded, oldest first, ending with ``record_id``.

        A cycle (``a`` superseded by ``b``, then ``b`` by ``a``) ends the chain at the first record seen twice."""
        chain = [self.get_record(actor_id, record_id)]
        with self.engine.connect() as connection:
            while True:
                row = connection.execute(
                    select(RECORDS).where(self._owned(RECORDS, actor_id), RECORDS.c.superseded_by == chain[0].id)
                ).first()
                if row is None or any(record.id == row.id for record in chain):
                    return chain
                chain.insert(0, record_from_row(row._mapping))

    def delete_record(self, actor_id: str, record_id: int) -> None:
        check_id("actor_id", actor_id)

        def work(connection: Connection) -> int:
            statement = delete(RECORDS).where(RECORDS.c.id == record_id, self._owned(RECORDS, actor_id))
            return connection.execute(statement).rowcount

        if run_write(self.engine, work) == 0:
            raise MemoryNotFoundError(f"record {record_id} does not exist for actor {actor_id!r}")

    def retrieve(
        self,
        actor_id: str,
        query: str,
        *,
        namespace: str | None = None,
        namespace_prefix: str | None = None,
        top_k: int = 10,
        filters: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        mode: SearchMode = "hybrid",
        recency_half_life: timedelta | None = None,
        query_embedding: np.ndarray | None = None,
        include_superseded: bool = False,
    ) -> list[ScoredRecord]:
        """The actor's records best matching ``query``; ``min_score`` is a floor on cosine similarity.

        ``namespace`` matches exactly, ``namespace_prefix`` matches a subtree (of whole segments when it ends with
        ``/``: ``/users/al/`` is ``/users/al`` and what lies under it, never ``/users/alice``); ``filters`` narrow by
        metadata.
        """
        check_id("actor_id", actor_id)
        started = time.time_ns()
        scope = Scope(RECORDS, actor_id, utcnow(), tenant=self.tenant)
        if namespace is not None or namespace_prefix is not None:
            name, condition, params = self._namespace_condition(namespace, namespace_prefix)
            scope.narrow(name, condition, **params)
        if not include_superseded:
            scope.narrow("current", RECORDS.c.superseded_by.is_(None))
        hits, rows = self._search(
            scope,
            query,
            top_k,
            mode,
            min_score,
            recency_half_life,
            compile_filters(filters) if filters else None,
            query_embedding,
        )
        found = [ScoredRecord(record=record_from_row(rows[h.id]), score=h.score, similarity=h.similarity) for h in hits]
        record_retrieval(started, namespace or namespace_prefix, query, [(f.record.text, f.score) for f in found])
        return found

    def extract(
        self, actor_id: str, session_id: str, strategies: Sequence[MemoryStrategy] | None = None
    ) -> list[MemoryRecord]:
        """Run long-term strategies (default: facts, preferences, summary) over a session's events."""
        from agentcore.memory.strategies import DEFAULT_STRATEGIES, run_strategies

        return run_strategies(self, actor_id, session_id, DEFAULT_STRATEGIES if strategies is None else strategies)

    # -- maintenance -----------------------------------------------------------------------------------

    def forget(self, actor_id: str, *, every_tenant: bool = False) -> ForgetReport:
        """Delete every event, record, session, full-text entry and vector of ``actor_id`` in this store's tenant
        (``every_tenant``: the actor of that id in every tenant, as :func:`agentcore.forget` does without a tenant),
        irrecoverably."""
        check_id("actor_id", actor_id)
        tenant = None if every_tenant else self.tenant

        def owned(table: Any) -> ColumnElement[bool]:
            return table.c.actor_id == actor_id if tenant is None else self._owned(table, actor_id)

        def work(connection: Connection) -> ForgetReport:
            counts = {
                name: connection.execute(delete(table).where(owned(table))).rowcount
                for name, table in (("events", EVENTS), ("records", RECORDS), ("sessions", SESSIONS))
            }
            connection.execute(delete(ACTORS).where(owned(ACTORS)))
            if connection.dialect.name == "sqlite":  # merge FTS5 segments so deleted terms leave the index
                versions = f"DELETE FROM {VERSIONS_TABLE} WHERE actor_id = :a" + (
                    "" if tenant is None else " AND tenant = :n"
                )
                connection.execute(text(versions), {"a": actor_id, "n": tenant})
                for table in FULLTEXT_TABLES:
                    connection.execute(text(f"INSERT INTO {table}_fts({table}_fts) VALUES ('optimize')"))
            return ForgetReport(actor_id=actor_id, tenant=tenant, **counts)

        report = run_write(self.engine, work)
        if isinstance(self._nominator, ActorMatrixCache):
            self._nominator.forget(tenant, actor_id)
        if self._side is not None:
            self._side.forget(tenant, actor_id)
        self._compact_after_delete()
        log.info("forgot actor %r: %s", actor_id, report)
        return report

    def purge(self, now: datetime | None = None) -> PurgeReport:
        """Delete expired events and records (they are already invisible) of every tenant; returns how many."""
        moment = utc(now) or utcnow()

        def work(connection: Connection) -> PurgeReport:
            counts = {
                name: connection.execute(
                    delete(table).where(table.c.expires_at.is_not(None), table.c.expires_at <= moment)
                ).rowcount
                for name, table in (("events", EVENTS), ("records", RECORDS))
            }
            return PurgeReport(**counts)

        report = run_write(self.engine, work)
        self._compact_after_delete()
        return report

    def stats(self) -> MemoryStats:
        """Counts of this store's tenant."""
        now = utcnow()
        with self.engine.connect() as connection:

            def count(table: Any, *where: Any) -> int:
                statement = select(func.count()).select_from(table).where(table.c.tenant == self.tenant, *where)
                return int(connection.execute(statement).scalar() or 0)

            return MemoryStats(
                backend=self.engine.dialect.name,
                tenant=self.tenant,
                schema_version=schema_version(connection),
                actors=count(ACTORS),
                sessions=count(SESSIONS),
                events=count(EVENTS),
                records=count(RECORDS),
                superseded_records=count(RECORDS, RECORDS.c.superseded_by.is_not(None)),
                expired_events=count(EVENTS, EVENTS.c.expires_at <= now),
                expired_records=count(RECORDS, RECORDS.c.expires_at <= now),
                unindexed_events=count(EVENTS, EVENTS.c.embedding.is_(None)),
            )

    @contextmanager
    def bulk_import(self, *, maintenance_work_mem: str = "1GB") -> Iterator[MemoryStore]:
        """Defer pgvector's HNSW maintenance for a large import: the indexes are dropped on entry and built over
        every row at once on exit (also when the block raises), then :meth:`analyze` runs.

        Inserting into an HNSW graph costs ~10 ms per row, building it over all rows a small fraction of that
        (see docs/memory.md, bulk import). Searches meanwhile stay exact, reading the actor's rows without the
        index; a process killed inside the block leaves the index missing, and the next store opened on the
        database builds it. ``maintenance_work_mem`` (PostgreSQL's setting, for the build only) should hold the
        graph: about 2 kB per 384-d row. Without pgvector (and on SQLite) this only runs :meth:`analyze` at the end.
        """
        if self.pgvector:
            drop_pgvector_indexes(self.engine)
        try:
            yield self
        finally:
            if self.pgvector:
                build_pgvector_indexes(self.engine, maintenance_work_mem)
            self.analyze()

    def analyze(self) -> None:
        """Refresh PostgreSQL's planner statistics now, after a bulk import, instead of within autovacuum's next round
        (about a minute). Until then the planner guesses a few hundred rows per actor: a heavy actor's vector search
        reads every row it has instead of walking the HNSW index (100,000 records: 357 ms against 3.3 ms, measured).
        On SQLite it does nothing: vectors are ranked in-process and the full-text query starts from FTS5."""
        if self.engine.dialect.name != "postgresql":
            return
        with self.engine.begin() as connection:
            connection.execute(text(f"ANALYZE {RECORDS.name}, {EVENTS.name}"))

    # -- internals -------------------------------------------------------------------------------------

    @staticmethod
    def _live(table: Any) -> Any:
        return (table.c.expires_at.is_(None)) | (table.c.expires_at > utcnow())

    @staticmethod
    def _namespace_condition(
        namespace: str | None, prefix: str | None
    ) -> tuple[str, ColumnElement[bool], dict[str, Any]]:
        """The condition on an exact namespace or a subtree: its name in a scope's shape, itself, its parameters."""
        if namespace is not None and prefix is not None:
            raise InvalidMemoryInputError("give namespace (exact) or namespace_prefix (subtree), not both")
        if namespace is not None:
            exact = RECORDS.c.namespace == bindparam("namespace", required=True)
            return "namespace", exact, {"namespace": check_namespace(namespace)}
        value = check_namespace(prefix)
        # substr, not LIKE: '%' and '_' in a namespace are data, never wildcards
        length: BindParameter[int] = bindparam("prefix_length", required=True)
        subtree: BindParameter[str] = bindparam("namespace_prefix", required=True)
        condition = func.substr(RECORDS.c.namespace, 1, length) == subtree
        params: dict[str, Any] = {"namespace_prefix": value, "prefix_length": len(value)}
        if value == "/" or not value.endswith("/"):
            return "subtree", condition, params
        # '/users/alice/': the subtree of whole segments under /users/alice, and /users/alice itself
        root: BindParameter[str] = bindparam("namespace_root", required=True)
        return "segments", or_(RECORDS.c.namespace == root, condition), params | {"namespace_root": value[:-1]}

    def _search(
        self,
        scope: Scope,
        query: str,
        top_k: int,
        mode: SearchMode,
        min_score: float | None,
        recency_half_life: timedelta | None,
        keep: Predicate | None,
        query_embedding: np.ndarray | None,
        session_context: bool = False,
    ) -> tuple[list[search.Hit], dict[int, RowMapping]]:
        """The hits of ``scope`` and their full rows, read on one connection (each checkout costs round trips)."""
        check_text("query", query, self.max_text_chars)
        check_top_k(top_k)
        check_score(min_score)
        if mode not in search.SEARCH_MODES:
            raise InvalidMemoryInputError(f"mode must be one of {', '.join(search.SEARCH_MODES)}, got {mode!r}")
        if min_score is not None and mode == "fulltext":
            raise InvalidMemoryInputError("min_score is a cosine-similarity floor; it needs mode 'vector' or 'hybrid'")
        vector = None
        if mode != "fulltext":
            vector = self.embed(scope.actor_id, [query])[0] if query_embedding is None else query_embedding
            vector = self._unit(np.asarray(vector).reshape(1, -1), 1)[0]
        similarity = None if vector is None else self._similarity(vector)
        actor_key = (scope.table.name, scope.tenant, scope.actor_id)
        side = self._side if vector is not None else None
        with self.engine.connect() as connection:
            ranking: Ranking = None
            if mode != "vector":
                rank = partial(
                    search.fulltext_ranking,
                    scope=scope,
                    terms=search.query_terms(query),
                    limit=search.RANK_DEPTH,
                    informative_only=mode == "hybrid",
                    match_cap=self.fulltext_match_cap,
                )
                # a large actor's full text ranks in a second backend while this connection nominates (with pgvector)
                ranking = side.submit(rank) if side is not None and side.worth_it(actor_key) else rank(connection)
            # fused or recency-weighted rankings look RANK_DEPTH deep; a plain vector ranking needs only top_k
            needed = top_k if ranking is None and recency_half_life is None else search.RANK_DEPTH
            candidates = self._candidates(
                connection, scope, keep, recency_half_life is not None, similarity, ranking, needed
            )
            fulltext = _ranked(ranking)
            if side is not None and fulltext is not None:
                # the nomination filled its limit: the actor has more rows in scope than a fused ranking reads
                side.remember(actor_key, large=len(candidates.ids) >= search.RANK_DEPTH)
            context = None
            if session_context and similarity is not None and fulltext is not None:
                candidates, context = search.session_context(
                    connection,
                    scope,
                    candidates,
                    keep,
                    similarity,
                    fulltext_ids=fulltext,
                    with_times=recency_half_life is not None,
                )
            hits = search.rank(
                candidates,
                fulltext_ids=fulltext,
                top_k=top_k,
                min_similarity=min_score,
                recency_half_life=recency_half_life,
                now=scope.now,
                context=context,
            )
            return hits, self._fetch(connection, scope.table, scope.tenant, scope.actor_id, [hit.id for hit in hits])

    def _similarity(self, vector: np.ndarray) -> search.Similarity:
        """How this store reads candidates' similarity to the unit query ``vector``."""
        return InDatabase(vector) if self.pgvector else search.InProcess(vector)

    def _candidates(
        self,
        connection: Connection,
        scope: Scope,
        keep: Predicate | None,
        with_times: bool,
        similarity: search.Similarity | None,
        ranking: Ranking,
        needed: int,
    ) -> search.Candidates:
        """The rows to rank: full-text matches plus the vector side's nominees, or every in-scope row.

        Nominees come without the scope's namespace/expiry/metadata conditions on SQLite; when fewer than
        ``needed`` survive them, a wider nomination (then everything) is read, so the vector ranking is
        the one over the rows in scope.
        """
        load = partial(search.load_candidates, connection, scope, keep, similarity, with_times=with_times)
        if similarity is None:
            return load(ids=_ranked(ranking) or [])
        if isinstance(similarity, InDatabase):
            return self._pgvector_candidates(connection, scope, keep, with_times, similarity, ranking, needed)
        fulltext = _ranked(ranking)
        for factor in NOMINATION_FACTORS:
            limit = factor * needed
            nominated = (
                self._nominator.nominate(connection, scope, similarity.query, limit) if self._nominator else None
            )
            if nominated is None:
                break
            candidates = load(ids=[*nominated, *(fulltext or [])])
            if len(nominated) < limit or np.isin(candidates.ids, nominated).sum() >= needed:
                return candidates
        return load()

    @staticmethod
    def _pgvector_candidates(
        connection: Connection,
        scope: Scope,
        keep: Predicate | None,
        with_times: bool,
        similarity: InDatabase,
        ranking: Ranking,
        needed: int,
    ) -> search.Candidates:
        """pgvector's nominees come in scope, with their similarities: only the full-text matches outside them are
        read again, and a fused ranking nominates no margin (``PGVECTOR_FUSED_FACTORS``).

        Fewer nominees than asked for prove nothing about the scope: an HNSW scan stops after
        ``hnsw.max_scan_tuples`` rows whichever actor they belong to, and rows without ``embedding_vec`` are never
        nominated. Then every row in scope is read, so that the caller's rows are never silently left out."""
        load = partial(search.load_candidates, connection, scope, keep, similarity, with_times=with_times)
        for factor in PGVECTOR_FUSED_FACTORS if ranking is not None else NOMINATION_FACTORS:
            limit = factor * needed
            nominees, read = pgvector_nearest(connection, scope, keep, with_times, similarity, limit)
            if read < limit:
                break
            if len(nominees.ids) >= needed:
                present = set(nominees.ids.tolist())
                rest = [row_id for row_id in _ranked(ranking) or [] if row_id not in present]
                if rest:
                    nominees = nominees.merged(load(ids=rest))
                return nominees.by_id()
        return load()

    def _unit(self, vectors: Any, rows: int) -> np.ndarray:
        """Unit rows of this store's dimension (a wrong dimension, NaN or zero vector is refused)."""
        vectors = unit_rows(np.asarray(vectors, dtype=np.float32), rows)
        if vectors.shape[1] != self.dimension:
            raise InvalidMemoryInputError(
                f"embeddings have {vectors.shape[1]} dimensions but this store holds {self.dimension}-dimensional "
                "ones; pass MemoryStore(dimension=...) to match your encoder"
            )
        return vectors

    def _blobs(self, vectors: Any, rows: int) -> list[bytes]:
        return [vector.astype("<f4").tobytes() for vector in self._unit(vectors, rows)]

    def _writable(self, table: Table) -> Table:
        """``table`` with its pgvector column when it has one: the statements that write embeddings use it."""
        return vector_table(table, self.dimension) if self._vector_copies else table

    @staticmethod
    def _fetch(
        connection: Connection, table: Table, tenant: str, actor_id: str, ids: Sequence[int]
    ) -> dict[int, RowMapping]:
        if not ids:
            return {}
        params = {
            search.TENANT_PARAM: tenant,
            search.ACTOR_PARAM: actor_id,
            search.NOW_PARAM: utcnow(),
            "ids": list(ids),
        }
        return {row.id: row._mapping for row in connection.execute(_fetch_query(table), params)}

    def _compact_after_delete(self) -> None:
        """SQLite: fold the WAL into the main file and truncate it, so deleted pages leave no copy behind."""
        if self.engine.dialect.name != "sqlite":
            return
        raw = self.engine.raw_connection()  # autocommit DBAPI connection: a checkpoint cannot run in a transaction
        try:
            busy = raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            raw.close()
        if busy and busy[0]:
            log.warning(
                "WAL checkpoint was blocked by another connection; deleted data stays in the WAL until the next"
            )
