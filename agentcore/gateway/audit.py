"""Hash-chained, append-only audit log of every decision and execution outcome.

Each record hashes its own content together with the previous record's hash, and a one-row head table holds the
last (seq, hash), so verification detects modified, deleted (including the tail), inserted and reordered
records. A record is committed before ``append`` returns; durability follows the database setting.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from sqlmodel import Field, SQLModel

from agentcore.gateway import canonical
from agentcore.gateway.db import Database

GENESIS = "0" * 64
_COLUMNS = (
    "seq", "ts", "kind", "call_id", "tool", "principal", "agent", "session", "tenant",
    "effect", "outcome", "mode", "bundle_hash", "detail", "prev_hash",
)  # fmt: skip
_HEADER = canonical.compact_encoder(sort_keys=False, default=str)  # str: a tampered column of an odd type
# itemgetter/attrgetter pick many fields in one C call: these run on every gateway call
_header_of = operator.itemgetter(*(c for c in _COLUMNS if c != "detail"))
_row_of = operator.itemgetter(*_COLUMNS)


class AuditRow(SQLModel, table=True):
    """Storage shape of one audit record (``detail`` is canonical JSON of reasons, args, obligations, errors)."""

    __tablename__ = "gateway_audit"

    seq: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    ts: float
    kind: str
    call_id: str
    tool: str
    principal: str
    agent: str | None = None
    session: str | None = None
    tenant: str | None = None
    effect: str | None = None
    outcome: str | None = None
    mode: str
    bundle_hash: str
    detail: str
    prev_hash: str
    hash: str


class AuditHead(SQLModel, table=True):
    """The last appended (seq, hash); lets verify notice records deleted from the end of the chain."""

    __tablename__ = "gateway_audit_head"

    id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    seq: int
    hash: str


@dataclass(slots=True)
class AuditEvent:
    """What the gateway records; the log adds seq, ts, prev_hash and hash.

    A plain (not even frozen) dataclass, not a pydantic model: the gateway builds one or two per call from values
    it already checked, and validation or frozen-field setup would cost a measurable share of that call.
    """

    kind: str  # decision | execution | approval
    call_id: str
    tool: str
    principal: str
    agent: str | None = None
    session: str | None = None
    tenant: str | None = None
    effect: str | None = None  # allow | deny | needs_approval | would_deny | approved | rejected
    outcome: str | None = None  # ok | error | timeout | denied | pending
    mode: str = "enforce"
    bundle_hash: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


class VerifyResult(BaseModel):
    """Outcome of a chain check: ``first_bad`` is the seq of the first record that fails, with the reason."""

    ok: bool
    records: int
    first_bad: int | None = None
    problem: str | None = None


def record_hash(values: dict[str, Any]) -> str:
    """SHA-256 over the columns in fixed order (``prev_hash`` included): a JSON array of all but ``detail``,
    then ``detail`` (already JSON text) as is.

    A JSON array ends where its closing bracket says, so the two parts cannot be confused; JSON keeps the
    encoding injective (strings quoted and escaped, ``None`` is ``null``) and floats round-trip exactly. The C
    encoder keeps it cheap: this runs on every gateway call.
    """
    digest = hashlib.sha256(_HEADER(_header_of(values)).encode("utf-8"))
    digest.update(str(values["detail"]).encode("utf-8"))
    return digest.hexdigest()


_HEAD_FOLLOWS = """CREATE TRIGGER IF NOT EXISTS gateway_audit_head_follows AFTER INSERT ON gateway_audit
BEGIN UPDATE gateway_audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1; END"""
_EVENT_FIELDS = tuple(f for f in AuditEvent.__dataclass_fields__ if f != "detail")
_event_fields_of = operator.attrgetter(*_EVENT_FIELDS)


def new_call_id() -> str:
    return os.urandom(16).hex()


class AuditLog:
    """Appends and verifies the chain in one database (shared by every process using that database)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.create([AuditRow, AuditHead])
        cols = ", ".join((*_COLUMNS, "hash"))
        marks = ", ".join("?" for _ in range(len(_COLUMNS) + 1))
        self._insert = db.sql(f"INSERT INTO gateway_audit ({cols}) VALUES ({marks})")
        self._head = db.sql("SELECT seq, hash FROM gateway_audit_head WHERE id = 1")
        self._head_new = db.sql("INSERT INTO gateway_audit_head (id, seq, hash) VALUES (1, ?, ?)")
        self._head_set = db.sql("UPDATE gateway_audit_head SET seq = ?, hash = ? WHERE id = 1")
        self._last: tuple[int, str] | None = None  # (seq, hash) of this process's latest append

    def append(self, event: AuditEvent, also: Callable[[Any], None] | None = None) -> int:
        """Append and commit one record; return its sequence number.

        ``also(cursor)`` runs in the same transaction, so related state (the call history) commits atomically
        with the record and costs no extra commit.

        On SQLite, a record usually goes in as one autocommitted INSERT linked to this process's latest record,
        with a trigger moving the head: if another process appended meanwhile, that seq is taken, the primary key
        refuses the INSERT, and the record is appended after reading the head in a write transaction instead.
        """
        values = dict(zip(_EVENT_FIELDS, _event_fields_of(event), strict=True))
        values["detail"] = canonical.dumps(event.detail)
        values["ts"] = time.time()
        with self.db.lock:
            if also is None and self._last is not None and self.db.backend == "sqlite":
                row = self._linked(values, self._last)
                try:
                    self.db.execute_alone(self._insert, row)
                except sqlite3.IntegrityError:  # another process appended since: read the head and retry
                    pass
                else:
                    return self._appended(row)
            with self.db.write("gateway_audit") as cur:
                if self._last is None and self.db.backend == "sqlite":
                    cur.execute(_HEAD_FOLLOWS)  # before this process's first fast append (created at most once)
                cur.execute(self._head)
                head = cur.fetchone()
                row = self._linked(values, head or (0, GENESIS))
                cur.execute(self._insert, row)
                if head is None:
                    cur.execute(self._head_new, (row[0], row[-1]))
                elif self.db.backend != "sqlite":  # on SQLite the trigger has moved the head already
                    cur.execute(self._head_set, (row[0], row[-1]))
                if also is not None:
                    also(cur)
            return self._appended(row)

    @staticmethod
    def _linked(values: dict[str, Any], head: tuple[int, str]) -> tuple[Any, ...]:
        """The row that follows ``head`` (seq, hash): the columns in order, then the record's hash."""
        values["seq"], values["prev_hash"] = head[0] + 1, head[1]
        return (*_row_of(values), record_hash(values))

    def _appended(self, row: tuple[Any, ...]) -> int:
        self._last = (row[0], row[-1])  # only once committed: a rolled-back record must not be linked to
        return int(row[0])

    def rows(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """Records in chain order as dicts (``detail`` still a JSON string)."""
        cols = (*_COLUMNS, "hash")
        query = self.db.sql(f"SELECT {', '.join(cols)} FROM gateway_audit WHERE seq > ? ORDER BY seq LIMIT 1000")
        while True:
            with self.db.read() as cur:
                cur.execute(query, (since,))
                batch = cur.fetchall()
            if not batch:
                return
            for row in batch:
                yield dict(zip(cols, row, strict=True))
            since = batch[-1][0]

    def verify(self) -> VerifyResult:
        """Walk the chain; the first record whose seq, link or hash is wrong is reported."""
        expected_seq, prev_hash, count = 1, GENESIS, 0
        for row in self.rows():
            count += 1
            seq = row["seq"]
            if seq != expected_seq:
                what = "missing (deleted)" if seq > expected_seq else "out of order"
                return VerifyResult(ok=False, records=count, first_bad=expected_seq, problem=f"record {what}")
            if row["prev_hash"] != prev_hash:
                problem = "link to the previous record is broken (inserted, deleted or reordered record)"
                return VerifyResult(ok=False, records=count, first_bad=seq, problem=problem)
            if record_hash(row) != row["hash"]:
                return VerifyResult(ok=False, records=count, first_bad=seq, problem="content was modified")
            prev_hash, expected_seq = row["hash"], seq + 1
        with self.db.read() as cur:
            cur.execute(self._head)
            head = cur.fetchone()
        head_seq, head_hash = (head[0], head[1]) if head else (0, GENESIS)
        if (head_seq, head_hash) != (expected_seq - 1, prev_hash):
            problem = f"the chain head says record {head_seq} is last; records after {expected_seq - 1} were deleted"
            return VerifyResult(ok=False, records=count, first_bad=expected_seq, problem=problem)
        return VerifyResult(ok=True, records=count)

    def export_jsonl(self) -> Iterator[str]:
        """One JSON object per record, ``detail`` decoded, in chain order."""
        for row in self.rows():
            row["detail"] = json.loads(row["detail"])
            yield canonical.dumps(row)
