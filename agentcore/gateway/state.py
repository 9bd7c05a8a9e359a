"""State for stateful rules: the history of calls, read and reserved in one atomic step per state key.

``limit`` rules, ``count``/``sum`` windows and ``after`` sequences all read the same history. A call is written
into it (reserved) *before* it runs, inside the same atomic section that read the history for its decision, so N
concurrent calls that would each pass alone never together exceed a cap. The section is per state key (the
caller's user, agent, session and tenant): SQLite serialises it with ``BEGIN IMMEDIATE``, PostgreSQL with
transaction-scoped advisory locks on each key, Redis with a lock key per state key that the commit script checks
is still held. Time inside a section is the store's clock, one for all its writers: PostgreSQL's
``clock_timestamp()``, Redis ``TIME``, and on SQLite the host's clock as SQLite reads it (every process sharing
a SQLite file runs on one host); a timestamp earlier than one already recorded for a key is refused.
``forget`` deletes a data subject's calls (erasure): their rows, or their members of every Redis sorted set.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from agentcore.gateway import canonical
from agentcore.gateway.db import Database
from agentcore.gateway.errors import ErasureIncomplete, StateUnavailable
from agentcore.gateway.identity import ANY_TENANT, TenantFilter, erasure_subject, in_tenant
from agentcore.policies.context import Scope

log = logging.getLogger(__name__)
StateKeys = Mapping[Scope, str]  # the state keys of one call: its user, agent, session and tenant (when known)


def _instant(seconds: float) -> float:
    """Epoch seconds as a decision sees them (a datetime, to the microsecond): a call reserved at ``now`` is then
    inside the window of a section that starts in the same millisecond, never a rounding error outside it."""
    return datetime.fromtimestamp(seconds, tz=UTC).timestamp()


class CallRecord(BaseModel):
    """One reserved (then executed) call as stateful rules see it."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    ts: float
    tool: str
    user: str
    agent: str | None = None
    session: str | None = None
    tenant: str | None = None
    args: dict[str, Any] = {}

    def key(self, scope: Scope) -> str | None:
        value: str | None = getattr(self, scope.value)
        return value


class StateView(abc.ABC):
    """The history as seen inside an atomic section: consistent reads, the store's clock, reservations."""

    now: float  # epoch seconds by the store's clock, fixed for the section

    @abc.abstractmethod
    def calls(self, scope: Scope, key: str, since: float, *, tenant: str | None) -> list[CallRecord]:
        """Calls of ``key`` in ``tenant`` after ``since``, oldest first, reservations of running calls included."""

    @abc.abstractmethod
    def reserve(self, call: CallRecord) -> None:
        """Add ``call`` to the history; it commits when the section ends without an error."""

    def transaction(self, db: Database) -> Any | None:
        """The cursor of this section's write transaction when it is one on ``db``, so that the caller's own
        writes there commit atomically with the reservation; ``None`` otherwise."""
        return None


class StateStore(abc.ABC):
    """History of calls per user/agent/session/tenant, read outside or inside an atomic section."""

    @abc.abstractmethod
    def calls(self, scope: Scope, key: str, since: float, *, tenant: str | None) -> list[CallRecord]:
        """Reserved calls of ``key`` (a user id, agent id, ...) in ``tenant`` (``None``: calls without one) after
        ``since`` (epoch seconds), oldest first. Ids are unique within a tenant only, so the tenant is always part
        of whose calls these are."""

    @abc.abstractmethod
    def atomic(self, keys: StateKeys) -> contextlib.AbstractContextManager[StateView]:
        """``with store.atomic(keys) as view``: no other section on any of ``keys`` runs until this one ends."""

    @abc.abstractmethod
    def release(self, call: CallRecord) -> None:
        """Undo a reservation: the call was denied after all, before it ran."""

    @abc.abstractmethod
    def forget(self, subject: str, tenant: TenantFilter = ANY_TENANT) -> int:
        """Delete every call of user ``subject`` in ``tenant`` (``None``: those without one; by default in every
        tenant and without one), as erasure must; the number of calls deleted. Both are read in canonical form."""

    def record(self, call: CallRecord) -> None:
        """Add ``call`` to the history in a section of its own (tests and imports of past calls)."""
        with self.atomic({s: k for s in Scope if (k := call.key(s)) is not None}) as view:
            view.reserve(call)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


class CallRow(SQLModel, table=True):
    """One call; one (scope column, ts) index per scope serves every window query."""

    __tablename__ = "gateway_calls"
    __table_args__ = tuple(Index(f"ix_gateway_calls_{s}_ts", s, "ts") for s in ("user", "agent", "session", "tenant"))

    call_id: str = Field(primary_key=True)
    ts: float
    tool: str
    user: str
    agent: str | None = None
    session: str | None = None
    tenant: str | None = None
    args: str


_COLUMNS = ("call_id", "ts", "tool", "user", "agent", "session", "tenant")


_CACHED_ARGS = 4096  # characters of a row's arguments JSON, at most, for its record to be kept: memory stays bounded


def _record_of(row: tuple[Any, ...]) -> CallRecord:
    """A history row as a record (read-only result), built once per distinct row when its arguments are small:
    rows are never updated, and each is read again by every later call in its window, twice per call (before and
    inside the section)."""
    return _cached_record(row) if len(row[7]) <= _CACHED_ARGS else _record(row)


def _record(row: tuple[Any, ...]) -> CallRecord:
    return CallRecord(**dict(zip(_COLUMNS, row[:7], strict=True)), args=json.loads(row[7]))


_cached_record = functools.lru_cache(maxsize=4096)(_record)


def forget_cached_history() -> None:
    """Drop the records built from history rows (erasure: no copy of a forgotten subject's calls stays behind)."""
    _cached_record.cache_clear()


def delete_calls(db: Database, cur: Any, subject: str, tenant: TenantFilter) -> int:
    """Delete the history rows of ``subject`` in ``tenant`` (both canonical) in the caller's write transaction on
    ``db``: the one place SQL history is erased, for the gateway database and a state database of its own alike."""
    if tenant is ANY_TENANT:
        cur.execute(db.sql('DELETE FROM gateway_calls WHERE "user" = ?'), (subject,))
    elif tenant is None:
        cur.execute(db.sql('DELETE FROM gateway_calls WHERE "user" = ? AND tenant IS NULL'), (subject,))
    else:
        cur.execute(db.sql('DELETE FROM gateway_calls WHERE "user" = ? AND tenant = ?'), (subject, tenant))
    return int(cur.rowcount)


class SqlStateStore(StateStore):
    """State in the gateway database; a section is one write transaction holding the keys' locks."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.create([CallRow])
        q = db.sql
        columns = 'call_id, ts, tool, "user", agent, session, tenant, args'
        self._insert = q(f"INSERT INTO gateway_calls ({columns}) VALUES (?,?,?,?,?,?,?,?)")
        # Null-safe equality on the tenant; on SQLite the unary + keeps its planner on the scope's (column, ts)
        # index, which without statistics it would trade for the tenant's (every call of the tenant).
        same_tenant = "+tenant IS ?" if db.backend == "sqlite" else "tenant IS NOT DISTINCT FROM ?"
        self._select = {
            scope: q(
                f'SELECT {columns} FROM gateway_calls WHERE "{scope.value}" = ? AND {same_tenant} AND ts > ? '
                "ORDER BY ts"
            )
            for scope in Scope
        }
        self._latest = {scope: q(f'SELECT MAX(ts) FROM gateway_calls WHERE "{scope.value}" = ?') for scope in Scope}
        self._delete = q("DELETE FROM gateway_calls WHERE call_id = ?")
        self._now = (
            "SELECT (julianday('now') - 2440587.5) * 86400.0"
            if db.backend == "sqlite"
            else "SELECT extract(epoch from clock_timestamp())::float8"
        )

    def calls(self, scope: Scope, key: str, since: float, *, tenant: str | None) -> list[CallRecord]:
        with self.db.read() as cur:
            return self._rows(cur, scope, key, tenant, since)

    def _rows(self, cur: Any, scope: Scope, key: str, tenant: str | None, since: float) -> list[CallRecord]:
        cur.execute(self._select[scope], (key, tenant, since))
        return [_record_of(row) for row in cur.fetchall()]

    @contextlib.contextmanager
    def atomic(self, keys: StateKeys) -> Iterator[StateView]:
        with self.db.write(*(f"state|{scope.value}|{key}" for scope, key in keys.items())) as cur:
            cur.execute(self._now)
            now = _instant(float(cur.fetchone()[0]))
            for scope, key in keys.items():
                cur.execute(self._latest[scope], (key,))
                latest = cur.fetchone()[0]
                if latest is not None and now < latest:
                    raise StateUnavailable(
                        f"the clock went backwards: {scope.value} {key!r} has a call recorded at {latest:.6f}, "
                        f"now is {now:.6f}; all writers of a SQLite state database must share one host clock"
                    )
            yield _SqlView(self, cur, now)

    def release(self, call: CallRecord) -> None:
        with self.db.write(f"state|{Scope.USER.value}|{call.user}") as cur:
            cur.execute(self._delete, (call.call_id,))

    def forget(self, subject: str, tenant: TenantFilter = ANY_TENANT) -> int:
        subject, tenant = erasure_subject(subject, tenant)
        with self.db.write() as cur:
            deleted = delete_calls(self.db, cur, subject, tenant)
        forget_cached_history()
        self.db.leave_no_copies([CallRow.__tablename__])
        return deleted


class _SqlView(StateView):
    def __init__(self, store: SqlStateStore, cur: Any, now: float) -> None:
        self.store, self.cur, self.now = store, cur, now

    def calls(self, scope: Scope, key: str, since: float, *, tenant: str | None) -> list[CallRecord]:
        return self.store._rows(self.cur, scope, key, tenant, since)

    def transaction(self, db: Database) -> Any | None:
        return self.cur if db is self.store.db else None

    def reserve(self, call: CallRecord) -> None:
        row = (call.call_id, call.ts, call.tool, call.user, call.agent, call.session, call.tenant)
        self.cur.execute(self.store._insert, (*row, canonical.dumps(call.args)))


# Commit a Redis section: only while every lock is still ours (it may have expired; 0) and no user of its calls is
# being erased (-1), add the calls, unlock. KEYS: ARGV[1] locks, ARGV[4] erasure markers, then the sorted sets;
# ARGV[2] the locks' token, ARGV[3] the retention, then a score and a member per sorted set.
_COMMIT_LUA = """
local n, m = tonumber(ARGV[1]), tonumber(ARGV[4])
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[2] then return 0 end
end
for i = n + 1, n + m do
  if redis.call('EXISTS', KEYS[i]) == 1 then return -1 end
end
local retention = tonumber(ARGV[3])
for i = n + m + 1, #KEYS do
  local j = (i - n - m) * 2 + 3
  local ts = tonumber(ARGV[j])
  redis.call('ZADD', KEYS[i], ts, ARGV[j + 1])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', ts - retention)
  redis.call('EXPIRE', KEYS[i], math.ceil(retention) + 60)
end
for i = 1, n do redis.call('DEL', KEYS[i]) end
return 1
"""
_UNLOCK_LUA = """
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 1
"""


_PAGE = 1000  # keys per SCAN, members per ZSCAN and ZREM: each command is short, however big the store
_ERASING_MS = 60_000  # an erasure marker outlives a forget that died by this long, and is renewed at a third of it


def _glob(text: str) -> str:
    """``text`` as a literal in a Redis MATCH pattern."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


class RedisStateStore(StateStore):
    """State in Redis: a sorted set of calls per scope key; a section holds one lock key per state key.

    A lock expires after ``lock_ttl_s`` so a process that dies inside a section frees its keys; a section that
    outlives its lock commits nothing (the call is denied), so the atomicity never depends on timing.
    A call is a member of the set of each of its scopes; ``forget`` removes the subject's from all of them.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "agentcore:gw",
        retention_s: float = 8 * 86400,
        lock_ttl_s: float = 10.0,
        lock_wait_s: float = 10.0,
    ) -> None:
        try:
            import redis
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Redis state needs the redis client: pip install 'agentcore-governance[redis]'") from exc
        self.client: Any = redis.Redis.from_url(url)
        self.prefix = prefix
        self.retention_s = retention_s
        self.lock_ttl_ms = int(lock_ttl_s * 1000)
        self.lock_wait_s = lock_wait_s
        self._commit = self.client.register_script(_COMMIT_LUA)
        self._unlock = self.client.register_script(_UNLOCK_LUA)

    def _key(self, scope: Scope, key: str) -> str:
        return f"{self.prefix}:calls:{scope.value}:{key}"

    def calls(self, scope: Scope, key: str, since: float, *, tenant: str | None) -> list[CallRecord]:
        members = self.client.zrangebyscore(self._key(scope, key), f"({since}", "+inf")
        return [call for m in members if (call := CallRecord.model_validate_json(m)).tenant == tenant]

    @contextlib.contextmanager
    def atomic(self, keys: StateKeys) -> Iterator[StateView]:
        locks = sorted(f"{self.prefix}:lock:{scope.value}:{key}" for scope, key in keys.items())
        token = os.urandom(16).hex()
        taken: list[str] = []
        try:
            for lock in locks:  # in one global order, so two sections never wait on each other
                self._acquire(lock, token)
                taken.append(lock)
            seconds, micros = self.client.time()
            view = _RedisView(self, _instant(seconds + micros / 1_000_000))
            yield view
            if view.reserved:
                markers = sorted({self._erasing_key(call.user) for call in view.reserved})
                committed = self._commit(
                    keys=[*taken, *markers, *view.keys()], args=view.args(len(taken), token, len(markers))
                )
                if committed == -1:
                    raise StateUnavailable(
                        "the caller is being erased (forget) from the Redis state: no call of theirs is recorded "
                        "until that has ended"
                    )
                if not committed:
                    raise StateUnavailable("a Redis state lock expired before its section committed; nothing kept")
                taken = []  # the commit script released them
        finally:
            if taken:
                self._unlock(keys=taken, args=[token])

    def _acquire(self, lock: str, token: str) -> None:
        deadline, pause = time.monotonic() + self.lock_wait_s, 0.0005
        while not self.client.set(lock, token, nx=True, px=self.lock_ttl_ms):
            if time.monotonic() > deadline:
                raise StateUnavailable(f"Redis state lock {lock} still held after {self.lock_wait_s:g}s")
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def release(self, call: CallRecord) -> None:
        member = canonical.dumps(call.model_dump())
        pipe = self.client.pipeline(transaction=True)
        for scope in Scope:
            if (key := call.key(scope)) is not None:
                pipe.zrem(self._key(scope, key), member)
        pipe.execute()

    def _erasing_key(self, user: str) -> str:
        return f"{self.prefix}:erasing:{user}"

    def forget(self, subject: str, tenant: TenantFilter = ANY_TENANT) -> int:
        """SCAN (never KEYS) every sorted set that may hold the subject's calls: their user's, and every agent's,
        session's and (of the tenant) tenant's, since each set is trimmed and expires on its own; ZSCAN each for
        members naming the subject and ZREM those that are theirs. Each command is short, so live gateways go on.
        While it runs, no call of the subject commits (see :meth:`_erasing`), so none lands behind the scan; calls
        already reserved and still running lose their place in the history like every other call of theirs."""
        subject, tenant = erasure_subject(subject, tenant)
        calls = f"{self.prefix}:calls:"
        pattern = f'*"user":{_glob(canonical.dumps(subject))}*'  # how every member of the subject names them
        forgotten: set[str] = set()
        with self._erasing(subject) as renew:
            for name in self.client.scan_iter(match=f"{_glob(calls)}*", count=_PAGE, _type="zset"):
                scope, _, key = name.decode("utf-8", "replace")[len(calls) :].partition(":")
                if scope == Scope.USER.value and key != subject:
                    continue  # a user's set holds that user's calls only
                if scope == Scope.TENANT.value and not in_tenant(tenant, key):
                    continue
                forgotten |= self._forget_in(name, pattern, subject, tenant, renew)
                renew()
        log.info("forgot %d call(s) of a subject from the Redis state under %s", len(forgotten), self.prefix)
        return len(forgotten)

    def _forget_in(
        self, name: bytes, pattern: str, subject: str, tenant: TenantFilter, renew: Callable[[], None]
    ) -> set[str]:
        """Remove the subject's members from the sorted set ``name``, a page at a time; their call ids."""
        forgotten: set[str] = set()
        cursor = 0
        while True:
            cursor, page = self.client.zscan(name, cursor, match=pattern, count=_PAGE)
            theirs = {}
            for member, _ in page:
                call = CallRecord.model_validate_json(member)
                if call.user == subject and in_tenant(tenant, call.tenant):
                    theirs[member] = call.call_id
            if theirs:
                self.client.zrem(name, *theirs)
                forgotten.update(theirs.values())
            if not cursor:
                return forgotten
            renew()

    @contextlib.contextmanager
    def _erasing(self, subject: str) -> Iterator[Callable[[], None]]:
        """While ``forget`` scans, a marker makes the commit script refuse every call of ``subject`` (denied,
        before it runs): a reservation committed behind the scan would stay. The marker is a set of the forgets
        running (one token each) that expires unless renewed; a forget that finds its token gone (it stalled past
        the expiry) cannot vouch that nothing was committed meanwhile, and says so."""
        marker, token = self._erasing_key(subject), os.urandom(16).hex()
        renewed = time.monotonic()

        def hold() -> int:
            added, _ = self.client.pipeline().sadd(marker, token).pexpire(marker, _ERASING_MS).execute()
            return int(added)

        def renew() -> None:
            nonlocal renewed
            if time.monotonic() - renewed < _ERASING_MS / 3000:
                return
            renewed = time.monotonic()
            if hold():
                raise ErasureIncomplete(
                    f"forget {subject!r} stalled for over {_ERASING_MS // 1000}s and lost its hold on the Redis "
                    "state, so calls of theirs may have been recorded meanwhile: run forget again"
                )

        hold()
        try:
            yield renew
        finally:
            self.client.srem(marker, token)

    def close(self) -> None:
        self.client.close()


class _RedisView(StateView):
    def __init__(self, store: RedisStateStore, now: float) -> None:
        self.store, self.now = store, now
        self.reserved: list[CallRecord] = []

    def calls(self, scope: Scope, key: str, since: float, *, tenant: str | None) -> list[CallRecord]:
        return self.store.calls(scope, key, since, tenant=tenant)

    def reserve(self, call: CallRecord) -> None:
        self.reserved.append(call)

    def _entries(self) -> Iterator[tuple[str, CallRecord]]:
        for call in self.reserved:
            for scope in Scope:
                if (key := call.key(scope)) is not None:
                    yield self.store._key(scope, key), call

    def keys(self) -> list[str]:
        return [name for name, _ in self._entries()]

    def args(self, locks: int, token: str, markers: int) -> list[Any]:
        values: list[Any] = [locks, token, self.store.retention_s, markers]
        for _, call in self._entries():
            values += [call.ts, canonical.dumps(call.model_dump())]
        return values


def open_store(url: str | None, db: Database) -> StateStore:
    """``None`` keeps state in the gateway database; a ``redis://`` / ``rediss://`` URL uses Redis."""
    if url is None:
        return SqlStateStore(db)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStateStore(url)
    return SqlStateStore(Database(url, durability=db.durability))
