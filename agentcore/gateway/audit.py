"""Hash-chained, append-only audit log of every decision and execution outcome.

Each record hashes its own content together with the previous record's hash, and a one-row head table holds the
last (seq, hash), so verification detects modified, deleted (including the tail), inserted and reordered
records. With a chain key (:mod:`agentcore.gateway.audit_keys`) the hash is an HMAC that someone who controls the
database cannot recompute; signed checkpoints outside the database (:mod:`agentcore.gateway.anchors`) catch
deletions that leave a consistent chain behind. Personal fields are sealed per subject
(:mod:`agentcore.gateway.sealing`). A record is committed before ``append`` returns; durability follows the
database setting; a ``defer``-red record is committed with the next commit, or within ``defer_s``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import operator
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from sqlmodel import Field, SQLModel

from agentcore.errors import AgentCoreError, ConfigError
from agentcore.gateway import canonical
from agentcore.gateway.anchors import Anchorer, AnchorSink, Checkpoint, trusted_checkpoints
from agentcore.gateway.audit_keys import ChainKey, ChainKeys
from agentcore.gateway.db import Database
from agentcore.gateway.group_commit import GroupCommit
from agentcore.gateway.sealing import SEALED, Sealer

log = logging.getLogger(__name__)
GENESIS = "0" * 64
_COLUMNS = (
    "seq", "ts", "kind", "call_id", "tool", "principal", "agent", "session", "tenant",
    "effect", "outcome", "mode", "bundle_hash", "detail", "key_id", "prev_hash",
)  # fmt: skip
_HEADER = canonical.compact_encoder(sort_keys=False, default=str)  # str: a tampered column of an odd type
# itemgetter/attrgetter pick many fields in one C call: these run on every gateway call
_plain_header_of = operator.itemgetter(*(c for c in _COLUMNS if c not in ("detail", "key_id")))
_keyed_header_of = operator.itemgetter(*(c for c in _COLUMNS if c != "detail"))
_row_of = operator.itemgetter(*_COLUMNS)
_ERASED = canonical.dumps({"erased": True})
_unkeyed_warned = False
_CONTENDED_BATCHES = 64  # batches that read the head first after another process was seen appending
_MAX_BATCH = 64  # records per commit: 17 columns each, well inside SQLite's 32,766 bound parameters


class AuditIntegrityError(AgentCoreError):
    """The chain does not verify, so an operation that would hide part of it (prune) is refused."""


class AuditRow(SQLModel, table=True):
    """Storage shape of one audit record (``detail`` is canonical JSON of reasons, args, obligations, errors,
    or, sealed, the ciphertext of the personal fields)."""

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
    key_id: str | None = None  # the chain key of an HMAC record; None: plain SHA-256
    prev_hash: str
    hash: str


class AuditHead(SQLModel, table=True):
    """The last appended (seq, hash); lets verify notice records deleted from the end of the chain."""

    __tablename__ = "gateway_audit_head"

    id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    seq: int
    hash: str


class AuditBase(SQLModel, table=True):
    """Where the chain starts after ``prune``: the last pruned (seq, hash), MACed like a record."""

    __tablename__ = "gateway_audit_base"

    id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    seq: int
    hash: str
    ts: float
    key_id: str | None = None
    mac: str


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
    outcome: str | None = None  # ok | error | timeout | cancelled | interrupted | denied | pending
    mode: str = "enforce"
    bundle_hash: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Joined:
    """A record written inside another write transaction (``AuditLog.append_within``), not yet committed."""

    rows: list[tuple[Any, ...]]
    started: float  # perf_counter() when the append began, for ``observe``


class VerifyResult(BaseModel):
    """Outcome of a chain check: ``first_bad`` is the seq of the first record that fails, with the reason.

    ``anchored_seq``/``anchored_at``: the last checkpoint verified against the chain (when anchors were given);
    ``pruned_through``: records up to this seq were pruned, and the chain starts after it.
    """

    ok: bool
    records: int
    first_bad: int | None = None
    problem: str | None = None
    keyed: bool = False
    anchored_seq: int | None = None
    anchored_at: float | None = None
    pruned_through: int = 0


class PruneReport(BaseModel):
    removed: int
    pruned_through: int


def record_hash(values: dict[str, Any], key: ChainKey | None = None) -> str:
    """The record's hash: a JSON array of every column but ``detail`` (and, unkeyed, ``key_id``) in fixed order,
    then ``detail`` (already JSON text) as is; SHA-256 of that text, or HMAC-SHA-256 under ``key``.

    A JSON array ends where its closing bracket says, so the two parts cannot be confused; JSON keeps the
    encoding injective (strings quoted and escaped, ``None`` is ``null``) and floats round-trip exactly. The C
    encoder keeps it cheap: this runs on every gateway call.
    """
    if key is None:
        digest = hashlib.sha256(_HEADER(_plain_header_of(values)).encode("utf-8"))
        digest.update(str(values["detail"]).encode("utf-8"))
        return digest.hexdigest()
    return key.mac((_HEADER(_keyed_header_of(values)) + str(values["detail"])).encode("utf-8"))


def _base_mac(seq: int, hash_: str, ts: float, key: ChainKey | None) -> str:
    message = _HEADER(["base", seq, hash_, ts]).encode("utf-8")
    return key.mac(message) if key is not None else hashlib.sha256(message).hexdigest()


_HEAD_FOLLOWS = """CREATE TRIGGER IF NOT EXISTS gateway_audit_head_follows AFTER INSERT ON gateway_audit
BEGIN UPDATE gateway_audit_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1; END"""
_EVENT_FIELDS = tuple(f for f in AuditEvent.__dataclass_fields__ if f != "detail")
_event_fields_of = operator.attrgetter(*_EVENT_FIELDS)
_STORED = (*_COLUMNS, "hash")


def new_call_id() -> str:
    return os.urandom(16).hex()


class AuditLog:
    """Appends and verifies the chain in one database (shared by every process using that database).

    ``keys``: the chain keys (``None``: plain SHA-256, with a one-time warning). ``anchors``: where signed
    checkpoints go (needs ``keys``: the signing key is derived from the current chain key). ``seal``: encrypt
    personal fields per subject so that :func:`agentcore.forget` can erase them. ``defer_s``: how long a deferred
    record waits for another commit to ride in before the flusher commits it.
    """

    def __init__(
        self,
        db: Database,
        *,
        keys: ChainKeys | None = None,
        anchors: AnchorSink | None = None,
        seal: bool = True,
        defer_s: float = 0.005,
    ) -> None:
        self.db = db
        self.keys = keys
        db.create([AuditRow, AuditHead, AuditBase])
        self.sealer = Sealer(db)
        self._seal = seal
        self._key = keys.current if keys is not None else None
        if anchors is not None and self._key is None:
            raise ConfigError("audit anchors are signed with a key derived from the chain key: configure audit_key")
        self.anchorer = Anchorer(anchors, self._key.signing_key()) if anchors is not None and self._key else None
        self._inserts: dict[int, str] = {}  # record count -> INSERT statement
        self._group: GroupCommit[dict[str, Any], int] = GroupCommit(self._write, max_batch=_MAX_BATCH, defer_s=defer_s)
        self._head = db.sql("SELECT seq, hash FROM gateway_audit_head WHERE id = 1")
        self._head_new = db.sql("INSERT INTO gateway_audit_head (id, seq, hash) VALUES (1, ?, ?)")
        self._head_set = db.sql("UPDATE gateway_audit_head SET seq = ?, hash = ? WHERE id = 1")
        self._base = db.sql("SELECT seq, hash, ts, key_id, mac FROM gateway_audit_base WHERE id = 1")
        self._last: tuple[int, str] | None = None  # (seq, hash) of this process's latest append
        self._contended = 0  # batches left to append with the head read first
        self.observe: Callable[[float, bool], None] | None = None  # (seconds, committed) of each append: metrics

    def append(self, event: AuditEvent, also: Callable[[Any], None] | None = None) -> int:
        """Append and commit one record; return its sequence number (timed for ``observe``, when set)."""
        observe = self.observe
        if observe is None:
            return self._append(event, also)
        started = time.perf_counter()
        try:
            seq = self._append(event, also)
        except Exception:
            observe(time.perf_counter() - started, False)
            raise
        observe(time.perf_counter() - started, True)
        return seq

    @contextmanager
    def held_without_waiting(self) -> Iterator[bool]:
        """Hold the lead of the group commit and the database if nobody else holds them now (True; else False,
        nothing held): meanwhile this thread's appends (and its other writes on this database) commit without
        waiting for another caller, and other callers wait for it."""
        with self._group.holding() as lead:
            if not lead:
                yield False
                return
            with self.db.held_without_waiting() as held:
                yield held

    def defer(self, event: AuditEvent, done: Callable[[BaseException | None], None]) -> None:
        """Queue one record for the next commit (the next append's, or the flusher's within ``defer_s``) and return
        without waiting for it; ``done(None)`` once it is committed, ``done(error)`` if it was not (called in the
        committing thread: keep it short). Sealing happens here, so its failure raises to the caller."""
        values = self._values(event)
        observe = self.observe
        if observe is None:
            self._group.defer(values, done)
            return
        started = time.perf_counter()

        def settled(error: BaseException | None) -> None:
            observe(time.perf_counter() - started, error is None)
            done(error)

        self._group.defer(values, settled)

    def flush(self) -> None:
        """Commit every deferred record now (each one's ``done`` has been called when this returns)."""
        self._group.flush()

    def _append(self, event: AuditEvent, also: Callable[[Any], None] | None) -> int:
        """Append and commit one record; return its sequence number.

        Concurrent appends share one commit (:mod:`.group_commit`); each returns only once its own record is
        committed, and raises if it was not. ``also(cursor)`` runs in the same transaction, so related state
        (an approval's sign-off) commits atomically with the record; such a record is written on its own. Never
        call it holding ``db.lock``: the caller leading the batch needs that lock to write it.
        """
        values = self._values(event)
        if also is None:
            return self._group.submit(values)
        values["ts"] = time.time()
        with self.db.lock:
            return self._write_transaction([values], also)[0]

    def _values(self, event: AuditEvent) -> dict[str, Any]:
        """The record's columns before it is chained: detail as canonical JSON, personal fields sealed."""
        _warn_if_unkeyed(self._key)
        values = dict(zip(_EVENT_FIELDS, _event_fields_of(event), strict=True))
        values["detail"] = canonical.dumps(event.detail)
        if self._seal:
            values["detail"] = self.sealer.seal(
                event.principal, event.agent, event.session, values["detail"], tenant=event.tenant
            )
            values["principal"], values["agent"], values["session"] = "", None, None
        values["key_id"] = self._key.id if self._key is not None else None
        return values

    def can_join(self, subject: str, tenant: str | None) -> bool:
        """Can a record of ``subject`` in ``tenant`` be written inside another write transaction (``append_within``)?
        On SQLite (on PostgreSQL the chain has an advisory lock of its own), once the subject's sealing key is
        known: creating it needs a transaction of its own."""
        return self.db.backend == "sqlite" and (not self._seal or self.sealer.known(subject, tenant))

    def append_within(self, cursor: Any, event: AuditEvent) -> Joined:
        """Write one record in the caller's open write transaction on this log's database (see ``can_join``), so
        that it commits, or rolls back, with the caller's other writes: one commit instead of two. The caller
        holds ``db.lock`` until it has committed and passed the result to ``committed``."""
        started = time.perf_counter()
        values = self._values(event)
        values["ts"] = time.time()
        return Joined(self._insert(cursor, [values]), started)

    def committed(self, joined: Joined) -> int:
        """Note a record of ``append_within`` whose transaction committed; its sequence number."""
        if self.observe is not None:
            self.observe(time.perf_counter() - joined.started, True)
        return self._appended(joined.rows)[0]

    def _write(self, batch: list[dict[str, Any]]) -> list[int]:
        """Commit one batch of records, chained in order: their sequence numbers.

        On SQLite, a batch usually goes in as one autocommitted INSERT linked to this process's latest record,
        with a trigger moving the head: if another process appended meanwhile, that seq is taken, the primary key
        refuses the INSERT, and the batch is appended after reading the head in a write transaction instead (as
        are the next ``_CONTENDED_BATCHES`` batches: while other processes append too, the guess mostly fails).
        """
        now = time.time()
        for values in batch:
            values["ts"] = now
        with self.db.lock:
            if self._contended:
                self._contended -= 1
            elif self._last is not None and self.db.backend == "sqlite":
                rows = self._chained(batch, self._last)
                params = rows[0] if len(rows) == 1 else [v for row in rows for v in row]  # one: as it is
                try:
                    self.db.execute_alone(self._insert_of(len(rows)), params)
                except sqlite3.IntegrityError:  # another process appended since: read the head and retry
                    self._contended = _CONTENDED_BATCHES
                else:
                    return self._appended(rows)
            return self._write_transaction(batch, None)

    def _write_transaction(self, batch: list[dict[str, Any]], also: Callable[[Any], None] | None) -> list[int]:
        with self.db.write("gateway_audit") as cur:
            rows = self._insert(cur, batch)
            if also is not None:
                also(cur)
        return self._appended(rows)

    def _insert(self, cur: Any, batch: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        """Chain ``batch`` after the head and insert it, inside the caller's write transaction."""
        if self._last is None and self.db.backend == "sqlite":
            cur.execute(_HEAD_FOLLOWS)  # before this process's first fast append (created at most once)
        cur.execute(self._head)
        head = cur.fetchone()
        rows = self._chained(batch, head or (0, GENESIS))
        cur.execute(self._insert_of(len(rows)), [v for row in rows for v in row])
        if head is None:
            cur.execute(self._head_new, (rows[-1][0], rows[-1][-1]))
        elif self.db.backend != "sqlite":  # on SQLite the trigger has moved the head already
            cur.execute(self._head_set, (rows[-1][0], rows[-1][-1]))
        return rows

    def _insert_of(self, count: int) -> str:
        """One INSERT statement for ``count`` records (one statement: one step, atomic even in autocommit)."""
        statement = self._inserts.get(count)
        if statement is None:
            rows = ", ".join([f"({', '.join('?' * len(_STORED))})"] * count)
            statement = f"INSERT INTO gateway_audit ({', '.join(_STORED)}) VALUES {rows}"
            statement = self._inserts[count] = self.db.sql(statement)
        return statement

    def _chained(self, batch: list[dict[str, Any]], head: tuple[int, str]) -> list[tuple[Any, ...]]:
        """The rows that follow ``head`` (seq, hash): each the columns in order, then the record's hash."""
        rows = []
        for values in batch:
            values["seq"], values["prev_hash"] = head[0] + 1, head[1]
            row = (*_row_of(values), record_hash(values, self._key))
            rows.append(row)
            head = (row[0], row[-1])
        return rows

    def _appended(self, rows: list[tuple[Any, ...]]) -> list[int]:
        self._last = (rows[-1][0], rows[-1][-1])  # only once committed: a rolled-back record must not be linked to
        if self.anchorer is not None:
            for row in rows:
                self.anchorer.note(row[0], row[-1])
        return [int(row[0]) for row in rows]

    def close(self) -> None:
        """Commit the deferred records, then write the closing checkpoint (when anchoring)."""
        self._group.close()
        if self.anchorer is not None:
            self.anchorer.close()

    # ---- reading --------------------------------------------------------------------------------------------
    def rows(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """Records in chain order as dicts, sealed fields opened (``detail`` still a JSON string); a forgotten
        subject's records have ``erased`` true, ``principal``/``agent``/``session`` None. Deferred records are
        committed first: this process reads its own records."""
        self.flush()
        query = self.db.sql(f"SELECT {', '.join(_STORED)} FROM gateway_audit WHERE seq > ? ORDER BY seq LIMIT 1000")
        while True:
            with self.db.read() as cur:
                cur.execute(query, (since,))
                batch = cur.fetchall()
            if not batch:
                return
            for row in batch:
                yield self._opened(dict(zip(_STORED, row, strict=True)))
            since = batch[-1][0]

    def _opened(self, row: dict[str, Any]) -> dict[str, Any]:
        row["erased"] = False
        if str(row["detail"]).startswith(SEALED):
            opened = self.sealer.open(row["detail"])
            if opened is None:
                row["principal"], row["detail"], row["erased"] = None, _ERASED, True
            else:
                row["principal"], row["agent"], row["session"], row["detail"] = opened
        return row

    def export_jsonl(self) -> Iterator[str]:
        """One JSON object per record, ``detail`` decoded, in chain order (erased subjects' fields are null)."""
        for row in self.rows():
            row["detail"] = json.loads(row["detail"])
            yield canonical.dumps(row)

    # ---- verification -----------------------------------------------------------------------------------------
    def verify(self, anchors: AnchorSink | None = None) -> VerifyResult:
        """Walk the chain in one snapshot; the first record whose seq, link, key or hash is wrong is reported.

        With ``anchors``, every checkpoint must be signed by a key derived from ``keys`` and match the record it
        names; a checkpoint beyond the last record means records were deleted. Raises ConfigError when the chain
        is keyed and the key is not at hand. Deferred records are committed first.
        """
        self.flush()
        checkpoints: list[Checkpoint] = []
        if anchors is not None:
            if self.keys is None:
                raise ConfigError("checking anchors needs the chain key that signed them (--key-file)")
            checkpoints, forged = trusted_checkpoints(anchors, self.keys.public_keys())
            if forged:
                return VerifyResult(ok=False, records=0, problem=forged)
        with self.db.snapshot() as cur:
            return _Walk(self, checkpoints, anchored=anchors is not None).run(cur)

    # ---- retention ----------------------------------------------------------------------------------------------
    def prune(self, before: float) -> PruneReport:
        """Delete the records older than ``before`` (epoch seconds) from the start of the chain, keeping the rest
        verifiable: the last pruned (seq, hash) becomes the chain's MACed base, and a signed "prune" checkpoint
        goes to the anchors. Records are cut at the first one not older than ``before``.

        The chain is verified first (against the anchors too): pruning a tampered chain would launder the tampering.
        """
        checked = self.verify(self.anchorer.sink if self.anchorer is not None else None)
        if not checked.ok:
            where = f"record {checked.first_bad}: {checked.problem}"
            raise AuditIntegrityError(f"not pruning: the audit chain is broken at {where}")
        with self.db.write("gateway_audit") as cur:
            cur.execute(self.db.sql("SELECT MIN(seq) FROM gateway_audit WHERE ts >= ?"), (before,))
            first_kept = cur.fetchone()[0]
            cur.execute(self._head)
            head = cur.fetchone()
            if head is None:
                return PruneReport(removed=0, pruned_through=0)
            cut = head[0] if first_kept is None else first_kept - 1
            cur.execute(self._base)
            base = cur.fetchone()
            if cut <= (base[0] if base else 0):
                return PruneReport(removed=0, pruned_through=base[0] if base else 0)
            if cut == head[0]:
                cut_hash = head[1]
            else:
                cur.execute(self.db.sql("SELECT prev_hash FROM gateway_audit WHERE seq = ?"), (cut + 1,))
                cut_hash = cur.fetchone()[0]
            ts = time.time()
            key_id = self._key.id if self._key else None
            mac = _base_mac(cut, cut_hash, ts, self._key)
            cur.execute(self.db.sql("DELETE FROM gateway_audit_base WHERE id = 1"))
            cur.execute(self.db.sql("INSERT INTO gateway_audit_base (id, seq, hash, ts, key_id, mac) "
                                    "VALUES (1, ?, ?, ?, ?, ?)"), (cut, cut_hash, ts, key_id, mac))  # fmt: skip
            cur.execute(self.db.sql("DELETE FROM gateway_audit WHERE seq <= ?"), (cut,))
            removed = int(cur.rowcount)
            if self.anchorer is not None:  # inside the transaction: no prune without its checkpoint
                self.anchorer.write(cut, cut_hash, kind="prune")
        return PruneReport(removed=removed, pruned_through=cut)


class _Walk:
    """One pass over the chain in a snapshot, checking records, base, head and checkpoints."""

    def __init__(self, log: AuditLog, checkpoints: list[Checkpoint], *, anchored: bool) -> None:
        self.log = log
        self.keys = log.keys
        self.check_prunes = anchored
        self.prunes = {c.seq for c in checkpoints if c.kind == "prune"}
        self.wanted: dict[int, list[Checkpoint]] = {}
        for checkpoint in checkpoints:
            self.wanted.setdefault(checkpoint.seq, []).append(checkpoint)
        self.anchored: Checkpoint | None = None

    def run(self, cur: Any) -> VerifyResult:
        cur.execute(self.log._base)
        base = cur.fetchone()
        start_seq, prev_hash = (base[0], base[1]) if base else (0, GENESIS)
        if base is not None and (problem := self._bad_base(base)):
            return self._fail(0, start_seq + 1, problem)
        if (problem := self._pruned_checkpoints(start_seq, prev_hash)) is not None:
            return self._fail(0, start_seq + 1, problem)
        expected_seq, count = start_seq + 1, 0
        cur.execute(self.log.db.sql(f"SELECT {', '.join(_STORED)} FROM gateway_audit ORDER BY seq"))
        while batch := cur.fetchmany(1000):
            for values in batch:
                row = dict(zip(_STORED, values, strict=True))
                count += 1
                seq = row["seq"]
                if seq != expected_seq:
                    what = "missing (deleted)" if seq > expected_seq else "out of order"
                    return self._fail(count, expected_seq, f"record {what}")
                if row["prev_hash"] != prev_hash:
                    problem = "link to the previous record is broken (inserted, deleted or reordered record)"
                    return self._fail(count, seq, problem)
                if row["key_id"] is None and self.keys is not None:  # a plain record could be anyone's forgery
                    return self._fail(count, seq, "record is not keyed (plain SHA-256 where the chain key is due)")
                if record_hash(row, self._key_of(row)) != row["hash"]:
                    return self._fail(count, seq, "content was modified")
                if (problem := self._checkpoint_problem(seq, row["hash"])) is not None:
                    return self._fail(count, seq, problem)
                prev_hash, expected_seq = row["hash"], seq + 1
        last = expected_seq - 1
        cur.execute(self.log._head)
        head = cur.fetchone()
        head_seq, head_hash = (head[0], head[1]) if head else (0, GENESIS)
        if (head_seq, head_hash) != (last, prev_hash):
            problem = f"the chain head says record {head_seq} is last; records after {last} were deleted"
            return self._fail(count, expected_seq, problem)
        beyond = [seq for seq in self.wanted if seq > last]
        if beyond:
            problem = (f"an anchor vouches for record {max(beyond)} but the chain ends at {last}: records were "
                       "deleted (tail truncated, all rows deleted or tables dropped)")  # fmt: skip
            return self._fail(count, last + 1, problem)
        return self._result(ok=True, records=count, pruned_through=start_seq)

    def _key_of(self, row: dict[str, Any]) -> ChainKey | None:
        key_id = row["key_id"]
        if key_id is None:
            return None
        if self.keys is None:
            raise ConfigError(f"record {row['seq']} is hashed with audit key {key_id!r}; verifying needs that key "
                              "(--key-file or AGENTCORE_AUDIT_KEY)")  # fmt: skip
        key = self.keys.get(key_id)
        if key is None:
            raise ConfigError(f"record {row['seq']} is hashed with audit key {key_id!r}, which the key source lacks")
        return key

    def _bad_base(self, base: tuple[Any, ...]) -> str | None:
        seq, hash_, ts, key_id, mac = base
        if key_id is None and self.keys is not None:
            return "the pruned-prefix checkpoint is not keyed"
        key = self._key_of({"seq": seq, "key_id": key_id})
        return None if _base_mac(seq, hash_, ts, key) == mac else "the pruned-prefix checkpoint was modified"

    def _pruned_checkpoints(self, base_seq: int, base_hash: str) -> str | None:
        """Checkpoints of pruned records cannot be checked, except the one the base must match."""
        for seq in [s for s in self.wanted if s <= base_seq]:
            checkpoints = self.wanted.pop(seq)
            if seq == base_seq and any(c.hash != base_hash for c in checkpoints):
                return f"the pruned prefix ends at record {seq} with a hash no anchor vouches for"
        if base_seq and self.check_prunes and base_seq not in self.prunes:
            return f"no prune checkpoint vouches for the pruned prefix (records 1-{base_seq})"
        return None

    def _checkpoint_problem(self, seq: int, hash_: str) -> str | None:
        checkpoints = self.wanted.pop(seq, None)
        if not checkpoints:
            return None
        if any(c.hash != hash_ for c in checkpoints):
            return "differs from the signed anchor of this record (chain rewritten)"
        self.anchored = checkpoints[-1]
        return None

    def _fail(self, records: int, first_bad: int, problem: str) -> VerifyResult:
        return self._result(ok=False, records=records, first_bad=first_bad, problem=problem)

    def _result(self, **fields: Any) -> VerifyResult:
        anchored = self.anchored
        return VerifyResult(keyed=self.keys is not None, anchored_seq=anchored.seq if anchored else None,
                            anchored_at=anchored.ts if anchored else None, **fields)  # fmt: skip


def _warn_if_unkeyed(key: ChainKey | None) -> None:
    global _unkeyed_warned
    if key is None and not _unkeyed_warned:
        _unkeyed_warned = True
        log.warning(
            "audit chain is not keyed: anyone who can write the database can rewrite it undetected; set "
            "AGENTCORE_AUDIT_KEY_FILE (see docs/gateway.md, 'Audit threat model')"
        )
