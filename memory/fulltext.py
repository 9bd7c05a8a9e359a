"""Full-text indexes that know the actor, so a query matches one actor's rows instead of everyone's.

Each indexed row carries an actor token next to its words: SQLite FTS5 gets an ``actor_key`` column
(``'a' || hex(actor_id)``, computable in SQL triggers and unique per id), PostgreSQL's generated
``tsvector`` gets one extra lexeme (``'a' || md5(actor_id)``). A query ANDs the token with its words, so the
index intersects with the actor's short posting list rather than collecting every actor's matches and
filtering afterwards. The token only narrows the work: the join on ``actor_id`` in the same statement
still enforces isolation, so neither a hash collision nor a stemmed token can leak a row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

ACTOR_COLUMN = "actor_key"
FULLTEXT_TABLES = ("memory_events", "memory_records")
_SQLITE_ACTOR_SQL = "'a' || hex({prefix}actor_id)"


def sqlite_actor_token(actor_id: str) -> str:
    """The FTS5 ``actor_key`` of ``actor_id``: SQLite's ``'a' || hex(actor_id)`` (FTS5 folds its case)."""
    return "a" + actor_id.encode().hex()


def postgres_actor_lexeme(actor_id: str) -> str:
    """The lexeme the generated ``search_vector`` holds for ``actor_id``: ``'a' || md5(actor_id)``."""
    return "a" + hashlib.md5(actor_id.encode(), usedforsecurity=False).hexdigest()


def sqlite_match(actor_id: str, terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: the actor's token AND any of ``terms`` (``\\w`` only, quoted) in the text."""
    words = " OR ".join(f'"{term}"' for term in terms)
    return f'{ACTOR_COLUMN} : "{sqlite_actor_token(actor_id)}" AND text : ({words})'


def sqlite_entries_sql(table: str) -> str:
    """INSERT the full-text entries of ``table``'s rows with ``id > ?`` (one statement per written batch)."""
    return (
        f"INSERT INTO {table}_fts(rowid, text, {ACTOR_COLUMN}) "
        f"SELECT id, text, {_SQLITE_ACTOR_SQL.format(prefix='')} FROM {table} WHERE id > ?"
    )


def sqlite_actor_index(table: str) -> list[str]:
    """Replace ``table``'s FTS5 index by one with the actor column, kept in sync on update and delete."""
    fts, source = f"{table}_fts", f"{table}_fts_source"
    old = f"'delete', old.id, old.text, {_SQLITE_ACTOR_SQL.format(prefix='old.')}"
    new = f"new.id, new.text, {_SQLITE_ACTOR_SQL.format(prefix='new.')}"
    columns = f"rowid, text, {ACTOR_COLUMN}"
    return [
        f"DROP TRIGGER IF EXISTS {fts}_delete",
        f"DROP TRIGGER IF EXISTS {fts}_update",
        f"DROP TABLE IF EXISTS {fts}",
        # external content: FTS5 reads the actor token through this view when it rebuilds
        f"CREATE VIEW {source} AS SELECT id, text, {_SQLITE_ACTOR_SQL.format(prefix='')} AS {ACTOR_COLUMN} "
        f"FROM {table}",
        f"CREATE VIRTUAL TABLE {fts} USING fts5(text, {ACTOR_COLUMN}, content='{source}', content_rowid='id', "
        "tokenize='porter unicode61')",
        f"CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, {columns}) VALUES ({old}); END",
        f"CREATE TRIGGER {fts}_update AFTER UPDATE OF text, actor_id ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, {columns}) VALUES ({old}); INSERT INTO {fts}({columns}) VALUES ({new}); END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def postgres_actor_index(table: str) -> list[str]:
    """Regenerate ``table``'s ``search_vector`` with the actor lexeme, and its GIN index."""
    return [
        f"DROP INDEX IF EXISTS ix_{table}_search",
        f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector",
        f"ALTER TABLE {table} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
        "(to_tsvector('english', text) || ('a' || md5(actor_id))::tsvector) STORED",
        f"CREATE INDEX ix_{table}_search ON {table} USING GIN (search_vector)",
    ]
