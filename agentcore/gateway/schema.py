"""Schema version of the gateway tables, so a database is never used by code that does not understand it.

Version 1 is the first release. A database stamped with a newer version is refused with an actionable error;
an older one will be brought forward by migrations listed here when version 2 exists (none are needed yet).
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel

from agentcore.errors import ConfigError
from agentcore.gateway.db import Database

CURRENT = 1


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
    if version > CURRENT:
        raise ConfigError(
            f"{db.url}: the gateway tables are at schema version {version}, newer than this agentcore "
            f"understands ({CURRENT}); upgrade agentcore-governance or use another database"
        )
    return version
