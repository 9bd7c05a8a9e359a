"""pgvector on PostgreSQL: a ``vector(d)`` copy of each embedding with an HNSW index, used to nominate rows.

The float32 ``embedding`` column stays the source of truth (exact re-ranking reads it); ``embedding_vec``
is written in the same statements and only decides which rows are read. Enabled on open when the
extension is installed (``CREATE EXTENSION vector`` where it is not yet created and the role may); without
it the store keeps exact search over the actor's rows.

Search sets ``hnsw.iterative_scan = relaxed_order`` (pgvector >= 0.8) so that a filtered HNSW scan keeps
walking the graph until enough of the actor's rows are found, instead of returning too few.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property, partial
from typing import Any

import numpy as np
from sqlalchemy import (
    Column,
    ColumnElement,
    Engine,
    MetaData,
    Row,
    Select,
    Table,
    bindparam,
    case,
    literal_column,
    text,
)
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.types import UserDefinedType

from agentcore.memory.database import run_write
from agentcore.memory.errors import MemoryStoreError
from agentcore.memory.filters import Predicate
from agentcore.memory.fulltext import FULLTEXT_TABLES
from agentcore.memory.search import Candidates, Scope, candidate_query, reused, scored, to_candidates

log = logging.getLogger(__name__)
COLUMN = "embedding_vec"
BACKFILL_BATCH = 2000
MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
QUERY_PARAM = "query"
INSUFFICIENT_PRIVILEGE = "42501"  # PostgreSQL's SQLSTATE
NARROW_ROW_BYTES = 1536  # toast_tuple_target: under a row with one 384-d embedding inline (see _narrow_rows)


def vector_literal(blob: bytes) -> str:
    """pgvector's text form of a little-endian float32 embedding.

    Nine significant digits round-trip every float32, so ``embedding_vec`` holds exactly the stored
    embedding (and formats faster than ``repr`` of the float64 widening).
    """
    return "[" + ",".join(map("{:.9g}".format, np.frombuffer(blob, dtype="<f4").tolist())) + "]"


class PgVector(UserDefinedType[bytes]):
    """A ``vector(d)`` column bound from the same float32 bytes as ``embedding``."""

    cache_ok = True

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def get_col_spec(self, **_kw: Any) -> str:
        return f"vector({self.dimension})"

    def bind_processor(self, dialect: Dialect) -> Any:
        return lambda value: None if value is None else vector_literal(bytes(value))


@cache
def vector_table(table: Table, dimension: int) -> Table:
    """``table`` plus its ``embedding_vec`` column, for the statements that write embeddings."""
    columns = [Column(column.name, column.type, primary_key=column.primary_key) for column in table.c]
    return Table(table.name, MetaData(), *columns, Column(COLUMN, PgVector(dimension)))


def enable(engine: Engine, dimension: int, *, required: bool) -> bool:
    """Create the extension, columns, backfill and HNSW indexes where missing; False if pgvector is absent."""

    def work(connection: Connection) -> bool:
        connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('agentcore.memory.pgvector'))"))
        if not _extension_ready(connection, required=required):
            return False
        for table in FULLTEXT_TABLES:
            _add_column(connection, table, dimension)
            _narrow_rows(connection, table)
            if connection.execute(text("SELECT to_regclass(:i) IS NULL"), {"i": index_name(table)}).scalar():
                _create_index(connection, table)  # new, or dropped by a bulk import that did not finish
        return True

    return run_write(engine, work)


def has_column(engine: Engine) -> bool:
    """Whether the tables have ``embedding_vec`` (a pgvector store opened them once). A store opened without pgvector
    on them writes NULL there with each embedding it changes: a stale copy would be nominated and scored instead."""
    with engine.connect() as connection:
        found = connection.execute(
            text(
                "SELECT count(*) FROM pg_attribute WHERE attname = :c AND NOT attisdropped "
                "AND attrelid = ANY (ARRAY[to_regclass(:events), to_regclass(:records)])"
            ),
            {"c": COLUMN, "events": FULLTEXT_TABLES[0], "records": FULLTEXT_TABLES[1]},
        ).scalar()
    return found == len(FULLTEXT_TABLES)


def _extension_ready(connection: Connection, *, required: bool) -> bool:
    if connection.execute(text("SELECT to_regtype('vector') IS NOT NULL")).scalar():
        return True
    installed = connection.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
    schema = connection.execute(
        text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'")
    ).scalar()
    reason = "the pgvector extension is not installed on the server (see docs/memory.md, pgvector)"
    if schema is not None:
        reason = f"the vector extension lives in schema {schema}, which is not on this connection's search_path"
    elif installed is not None:
        try:
            with connection.begin_nested():
                connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            return True
        except DBAPIError as error:
            reason = f"CREATE EXTENSION vector failed (ask a superuser to run it once): {error.orig}"
    if required:
        raise MemoryStoreError(f"pgvector=True but {reason}")
    log.info("memory: exact vector search without pgvector: %s", reason)
    return False


def _add_column(connection: Connection, table: str, dimension: int) -> None:
    existing = connection.execute(
        text(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = to_regclass(:t) AND attname = :c AND NOT attisdropped"
        ),
        {"t": table, "c": COLUMN},
    ).scalar()
    if existing is not None:
        if existing != f"vector({dimension})":
            raise MemoryStoreError(
                f"{table}.{COLUMN} is {existing} but this store uses {dimension}-dimensional embeddings; "
                "open it with the dimension it was created with"
            )
        return
    log.info("memory: adding %s.%s vector(%d) with an HNSW index", table, COLUMN, dimension)
    connection.execute(text(f"ALTER TABLE {table} ADD COLUMN {COLUMN} vector({dimension})"))
    rows = connection.execute(text(f"SELECT id, embedding FROM {table} WHERE embedding IS NOT NULL")).all()
    fill = text(f"UPDATE {table} SET {COLUMN} = CAST(:vec AS vector) WHERE id = :row_id")
    for start in range(0, len(rows), BACKFILL_BATCH):
        batch = rows[start : start + BACKFILL_BATCH]
        connection.execute(fill, [{"row_id": row.id, "vec": vector_literal(bytes(row.embedding))} for row in batch])


def _narrow_rows(connection: Connection, table: str) -> None:
    """Keep ``table``'s embeddings out of line, so that a scan over an actor's rows reads narrow rows.

    With pgvector a row holds its embedding twice (bytea and vector, ~1.5 kB each), and PostgreSQL moves values
    out of line only until a row fits ``toast_tuple_target`` (2032 bytes by default): the bytea stayed inline, four
    rows per page, and walking a heavy actor's newest full-text matches visited 2 kB per row. Below the size of a
    row holding one embedding, both go out of line (searches read similarities, :class:`InDatabase`, never the
    bytea). Rows written before keep their layout until ``VACUUM FULL`` rewrites them (see docs/memory.md).
    """
    storage = connection.execute(
        text("SELECT attstorage FROM pg_attribute WHERE attrelid = to_regclass(:t) AND attname = 'embedding'"),
        {"t": table},
    ).scalar()
    if storage == "e":  # both settings change in one transaction: 'e' means both are set
        return
    try:
        with connection.begin_nested():
            connection.execute(text(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE EXTERNAL"))
            connection.execute(text(f"ALTER TABLE {table} SET (toast_tuple_target = {NARROW_ROW_BYTES})"))
    except DBAPIError as error:
        if getattr(error.orig, "pgcode", None) != INSUFFICIENT_PRIVILEGE:
            raise
        # a role that does not own the table (an application role beside a migration role) works as before
        log.warning("memory: %s keeps its embeddings inline until its owner opens a store on it: %s", table, error.orig)


def index_name(table: str) -> str:
    return f"ix_{table}_{COLUMN}"


def _create_index(connection: Connection, table: str, maintenance_work_mem: str | None = None) -> None:
    if maintenance_work_mem is not None:  # the graph is built in memory while it fits (much faster)
        connection.execute(text("SELECT set_config('maintenance_work_mem', :m, true)"), {"m": maintenance_work_mem})
    connection.execute(
        text(f"CREATE INDEX IF NOT EXISTS {index_name(table)} ON {table} USING hnsw ({COLUMN} vector_cosine_ops)")
    )


def drop_indexes(engine: Engine) -> None:
    """Drop the HNSW indexes for a bulk import: maintaining the graph per inserted row is most of its cost."""

    def work(connection: Connection) -> None:
        for table in FULLTEXT_TABLES:
            connection.execute(text(f"DROP INDEX IF EXISTS {index_name(table)}"))

    run_write(engine, work)


def build_indexes(engine: Engine, maintenance_work_mem: str) -> None:
    """(Re)build the HNSW indexes a bulk import dropped, over every row at once, each in its own transaction."""
    for table in FULLTEXT_TABLES:
        run_write(engine, partial(_create_index, table=table, maintenance_work_mem=maintenance_work_mem))


@dataclass(frozen=True)
class InDatabase:
    """Similarities to the unit ``query`` computed by PostgreSQL from ``embedding_vec`` (the same float32 values
    as ``embedding``): a candidate row sends one number instead of its embedding (~3 kB as hex-encoded bytea),
    and the heap can keep the embeddings out of line (see :func:`_narrow_rows`)."""

    query: np.ndarray

    @cached_property
    def params(self) -> dict[str, Any]:
        """Formatted once per search (~0.1 ms for 384 floats), for every statement that computes distances."""
        return {QUERY_PARAM: vector_literal(self.query.astype("<f4").tobytes())}

    def columns(self, table: Table) -> list[ColumnElement[Any]]:
        # a row written by a store opened with pgvector=False has no embedding_vec: its bytea comes instead
        vector: ColumnElement[Any] = literal_column(f"{table.name}.{COLUMN}")
        return [_distance(table).label("distance"), case((vector.is_(None), table.c.embedding)).label("embedding")]

    def read(self, rows: Sequence[Row[Any]]) -> np.ndarray:
        similarities = 1.0 - np.array([row.distance for row in rows], np.float64)  # NULL (no embedding_vec): NaN
        unindexed = np.flatnonzero(np.isnan(similarities))
        if len(unindexed):
            similarities[unindexed] = scored([rows[int(i)] for i in unindexed], self.query)
        return similarities


def _distance(table: Table) -> ColumnElement[Any]:
    """pgvector's cosine distance from ``embedding_vec`` to ``:query``."""
    return literal_column(f"{table.name}.{COLUMN}").op("<=>")(bindparam(QUERY_PARAM, required=True))


def nearest(
    connection: Connection,
    scope: Scope,
    keep: Predicate | None,
    with_times: bool,
    similarity: InDatabase,
    limit: int,
) -> tuple[Candidates, int]:
    """The actor's ``limit`` nearest rows in the scope's SQL conditions, nominated by pgvector's HNSW index, with the
    columns exact re-ranking needs read by the nominating statement itself (a second lookup by id would visit the
    same rows again), and how many rows it read before ``keep``."""
    ef_search = min(max(limit, 100), MAX_EF_SEARCH)
    # set_config(..., true) is SET LOCAL; both settings in one round trip
    connection.execute(
        text(
            "SELECT set_config('hnsw.ef_search', :ef_search, true), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', true)"
        ),
        {"ef_search": str(ef_search)},
    )
    build = partial(_nearest, scope, keep, with_times, similarity)
    statement = reused(("nearest", keep is not None, with_times), scope, build)
    rows = connection.execute(statement, scope.params | similarity.params | {"limit": limit}).all()
    return to_candidates(rows, keep, similarity, with_times=with_times), len(rows)


def _nearest(scope: Scope, keep: Predicate | None, with_times: bool, similarity: InDatabase) -> Select[Any]:
    """The scope's ``:limit`` rows nearest to ``:query`` (pgvector's text form) by cosine distance, through HNSW;
    ordered by the selected distance, so that a plan which sorts computes it once per row."""
    column: ColumnElement[Any] = literal_column(f"{scope.table.name}.{COLUMN}")
    distance = _distance(scope.table)
    statement = candidate_query(scope, keep, with_times, similarity).where(*scope.conditions, column.is_not(None))
    return statement.order_by(distance).limit(bindparam("limit", required=True))
