"""Schema versions of the memory tables: each migration runs once, in order, inside one transaction.

A database is never dropped or rebuilt: an older one is brought forward step by step (keeping its rows),
and one written by a newer agentcore is refused with :class:`SchemaVersionError` rather than guessed at.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine, Index, MetaData, Table, func, select, text
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from agentcore.memory.database import run_write, utcnow
from agentcore.memory.errors import SchemaVersionError
from agentcore.memory.fulltext import FULLTEXT_TABLES, postgres_actor_index, sqlite_actor_index
from agentcore.memory.tables import (
    ACTORS,
    EVENTS,
    EVENTS_INDEX,
    MEMORY_TABLES,
    RECORDS,
    RECORDS_INDEX,
    SCHEMA_VERSIONS,
    SESSIONS,
)
from agentcore.memory.vectors import VERSIONS_TABLE, sqlite_version_triggers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


# The indexes that led with the actor before version 8 (tenant first since).
_ACTOR_INDEXES = {
    EVENTS.name: ("ix_memory_events_actor_session", ("actor_id", "session_id", "id"), EVENTS_INDEX),
    RECORDS.name: ("ix_memory_records_actor_namespace", ("actor_id", "namespace"), RECORDS_INDEX),
}


def _version_1_tables() -> MetaData:
    """The memory tables as version 1 created them: today's without the tenant (added by version 8)."""
    metadata = MetaData()
    for table in MEMORY_TABLES:
        copy = Table(table.name, metadata, *(column._copy() for column in table.c if column.name != "tenant"))
        if table.name in _ACTOR_INDEXES:
            name, columns, _ = _ACTOR_INDEXES[table.name]
            Index(name, *(copy.c[column] for column in columns))
    return metadata


def _core_tables(connection: Connection) -> None:
    _version_1_tables().create_all(connection)


def _fulltext_indexes(connection: Connection) -> None:
    """SQLite: external-content FTS5 tables kept in sync by triggers; PostgreSQL: a generated tsvector + GIN."""
    for table in FULLTEXT_TABLES:
        if connection.dialect.name == "postgresql":
            connection.execute(
                text(
                    f"ALTER TABLE {table} ADD COLUMN search_vector tsvector "
                    "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"
                )
            )
            connection.execute(text(f"CREATE INDEX ix_{table}_search ON {table} USING GIN (search_vector)"))
            continue
        fts = f"{table}_fts"
        statements = [
            f"CREATE VIRTUAL TABLE {fts} USING fts5(text, content='{table}', content_rowid='id', "
            "tokenize='porter unicode61')",
            f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN "
            f"INSERT INTO {fts}(rowid, text) VALUES (new.id, new.text); END",
            f"CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, text) VALUES ('delete', old.id, old.text); END",
            f"CREATE TRIGGER {fts}_update AFTER UPDATE OF text ON {table} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, text) VALUES ('delete', old.id, old.text); "
            f"INSERT INTO {fts}(rowid, text) VALUES (new.id, new.text); END",
            f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",  # index the rows written before this version
        ]
        for statement in statements:
            connection.execute(text(statement))


def _bulk_fulltext_inserts(connection: Connection) -> None:
    """SQLite: new rows reach FTS5 by one INSERT ... SELECT per batch (rows.insert_many), not a per-row trigger."""
    if connection.dialect.name == "sqlite":
        for table in FULLTEXT_TABLES:
            connection.execute(text(f"DROP TRIGGER IF EXISTS {table}_fts_insert"))


def _actor_fulltext(connection: Connection) -> None:
    """Full-text entries carry the actor, so matching starts from one actor's rows (see fulltext.py)."""
    build = postgres_actor_index if connection.dialect.name == "postgresql" else sqlite_actor_index
    for table in FULLTEXT_TABLES:
        for statement in build(table):
            connection.execute(text(statement))


def _vector_versions(connection: Connection) -> None:
    """SQLite: per-actor embedding versions, so cached actor matrices know when they are stale (vectors.py)."""
    if connection.dialect.name == "sqlite":
        for statement in sqlite_version_triggers():
            connection.execute(text(statement))


def _random_first_versions(connection: Connection) -> None:
    """SQLite: an actor's first embedding version is random (vectors.py), so one written again after ``forget``
    never meets a matrix another process cached before."""
    if connection.dialect.name == "sqlite":
        for statement in sqlite_version_triggers(backfill=False):
            connection.execute(text(statement))


def _newest_first(connection: Connection) -> None:
    """PostgreSQL: walk an actor's rows newest first, so a capped full-text ranking stops early (search.py)."""
    if connection.dialect.name == "postgresql":
        for table in FULLTEXT_TABLES:
            connection.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{table}_actor_newest ON {table} (actor_id, id)"))


def _tenants(connection: Connection) -> None:
    """A tenant column first in every key and index that led with the actor: rows written before are the default
    tenant's (``MemoryStore(tenant="default")``), so their stores see no change."""
    postgres = connection.dialect.name == "postgresql"
    add = "ALTER TABLE {} ADD COLUMN tenant VARCHAR(255) NOT NULL DEFAULT 'default'"
    for keyed in (ACTORS, SESSIONS):  # the tenant joins the primary key
        if postgres:
            keys = ", ".join(column.name for column in keyed.primary_key.columns)
            connection.execute(text(add.format(keyed.name)))
            connection.execute(text(f"ALTER TABLE {keyed.name} DROP CONSTRAINT {keyed.name}_pkey"))
            connection.execute(text(f"ALTER TABLE {keyed.name} ADD PRIMARY KEY ({keys})"))
            continue
        # SQLite cannot change a primary key: the table is rebuilt under its new definition
        old = ", ".join(column.name for column in keyed.c if column.name != "tenant")
        connection.execute(text(f"ALTER TABLE {keyed.name} RENAME TO {keyed.name}_v7"))
        SQLModel.metadata.create_all(connection, tables=[keyed])
        connection.execute(
            text(f"INSERT INTO {keyed.name} (tenant, {old}) SELECT 'default', {old} FROM {keyed.name}_v7")
        )
        connection.execute(text(f"DROP TABLE {keyed.name}_v7"))
    for table in FULLTEXT_TABLES:
        connection.execute(text(add.format(table)))
        old_index, columns, new_index = _ACTOR_INDEXES[table]
        connection.execute(text(f"DROP INDEX IF EXISTS {old_index}"))
        connection.execute(text(f"CREATE INDEX {new_index} ON {table} (tenant, {', '.join(columns)})"))
        if postgres:  # new rows always name their tenant: none falls back to the default one
            connection.execute(text(f"ALTER TABLE {table} ALTER COLUMN tenant DROP DEFAULT"))
            connection.execute(text(f"DROP INDEX IF EXISTS ix_{table}_actor_newest"))
            connection.execute(text(f"CREATE INDEX ix_{table}_tenant_actor_newest ON {table} (tenant, actor_id, id)"))
    if postgres:
        for keyed in (ACTORS, SESSIONS):
            connection.execute(text(f"ALTER TABLE {keyed.name} ALTER COLUMN tenant DROP DEFAULT"))
    else:
        connection.execute(text(f"DROP TABLE IF EXISTS {VERSIONS_TABLE}"))
        for statement in sqlite_version_triggers(tenant=True):
            connection.execute(text(statement))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "actors, sessions, events, records", _core_tables),
    Migration(2, "full-text indexes on events and records", _fulltext_indexes),
    Migration(3, "full-text entries written per batch instead of per-row trigger", _bulk_fulltext_inserts),
    Migration(4, "full-text indexes restricted to the actor before ranking", _actor_fulltext),
    Migration(5, "per-actor embedding versions for the in-process vector cache", _vector_versions),
    Migration(6, "per-actor newest-first indexes for the capped full-text ranking", _newest_first),
    Migration(7, "random first embedding versions, so versions after forget are never reused", _random_first_versions),
    Migration(8, "a tenant first in every actor key and index; earlier rows are the default tenant's", _tenants),
)
LATEST_VERSION = MIGRATIONS[-1].version


def schema_version(connection: Connection) -> int:
    """The highest applied migration (0 for a database without memory tables)."""
    if not connection.dialect.has_table(connection, SCHEMA_VERSIONS.name):
        return 0
    return int(connection.execute(select(func.max(SCHEMA_VERSIONS.c.version))).scalar() or 0)


def migrate(engine: Engine, target: int = LATEST_VERSION) -> int:
    """Bring the database to ``target`` (default: latest); returns the version it is at afterwards."""

    def work(connection: Connection) -> int:
        if connection.dialect.name == "postgresql":  # serialise concurrent first opens
            connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('agentcore.memory.migrate'))"))
        SQLModel.metadata.create_all(connection, tables=[SCHEMA_VERSIONS])
        current = schema_version(connection)
        if current > LATEST_VERSION:
            raise SchemaVersionError(
                f"the memory tables are at schema version {current}, newer than this agentcore supports "
                f"({LATEST_VERSION}); upgrade agentcore-governance to open this database"
            )
        for migration in MIGRATIONS[current:target]:
            log.info("memory schema: applying version %d (%s)", migration.version, migration.description)
            migration.apply(connection)
            connection.execute(
                SCHEMA_VERSIONS.insert().values(
                    version=migration.version, description=migration.description, applied_at=utcnow()
                )
            )
        return max(current, target)

    return run_write(engine, work)
