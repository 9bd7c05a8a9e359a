"""Schema version of the gateway tables, so a database is never used by code that does not understand it.

Version 1 is the first release; version 2 adds the chain key id to audit records. A database stamped with a
newer version is refused with an actionable error; an older one is brought forward by the migrations below.
"""

from __future__ import annotations

from sqlalchemy import inspect
from sqlmodel import Field, SQLModel

from agentcore.errors import ConfigError
from agentcore.gateway.db import Database

CURRENT = 2
# version -> (table, column, SQL type) added by it; a table not created yet gets the column when it is
_ADDED_COLUMNS = {2: [("gateway_audit", "key_id", "VARCHAR")]}


class SchemaRow(SQLModel, table=True):
    __tablename__ = "gateway_schema"

    id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    version: int


def ensure_schema(db: Database) -> int:
    """Stamp a new database with :data:`CURRENT`; refuse one written by a newer gateway. Returns the version."""
    db.create([SchemaRow])
    with db.write("gateway_schema") as cur:
        cur.execute("SELECT version FROM gateway_schema WHERE id = 1")
        row = cur.fetchone()
        if row is None:
            cur.execute(db.sql("INSERT INTO gateway_schema (id, version) VALUES (1, ?)"), (CURRENT,))
            return CURRENT
    version = int(row[0])
    if version < CURRENT:
        _migrate(db, version)
        return CURRENT
    if version > CURRENT:
        raise ConfigError(
            f"{db.url}: the gateway tables are at schema version {version}, newer than this agentcore "
            f"understands ({CURRENT}); upgrade agentcore-governance or use another database"
        )
    return version


def _migrate(db: Database, version: int) -> None:
    tables = set(inspect(db.engine).get_table_names())
    with db.write("gateway_schema") as cur:
        for step in range(version + 1, CURRENT + 1):
            for table, column, sql_type in _ADDED_COLUMNS.get(step, []):
                if table in tables:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
        cur.execute(db.sql("UPDATE gateway_schema SET version = ? WHERE id = 1"), (CURRENT,))
