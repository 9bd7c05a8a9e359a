"""State for stateful rules: the history of executed calls and atomic rate-limit reservations.

Two stores share one interface: the database (default; SQLite or PostgreSQL) and Redis (for gateways that run
as several processes or machines). Reservations are check-and-insert in one atomic step (a serialised write
transaction, or a Lua script), so N processes hammering a "10 per minute" rule admit exactly 10.
"""

from __future__ import annotations

import abc
import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from agentcore.gateway import canonical
from agentcore.gateway.db import Database
from agentcore.policies.context import Scope


class CallRecord(BaseModel):
    """One executed call as stateful rules see it."""

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


class StateStore(abc.ABC):
    """History of executed calls per user/agent/session/tenant, and rate-limit buckets."""

    @abc.abstractmethod
    def record(self, call: CallRecord) -> None:
        """Remember an executed call."""

    @abc.abstractmethod
    def calls(self, scope: Scope, key: str, since: float) -> list[CallRecord]:
        """Executed calls of ``key`` (a user id, agent id, ...) after ``since`` (epoch seconds), oldest first."""

    @abc.abstractmethod
    def reserve(self, bucket: str, limit: int, window_s: float, call_id: str) -> bool:
        """Atomically: if fewer than ``limit`` reservations exist in the last ``window_s``, add one; say if it did."""

    @abc.abstractmethod
    def release(self, bucket: str, call_id: str) -> None:
        """Undo a reservation (the call was not executed after all)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


class CallRow(SQLModel, table=True):
    """One executed call; one (scope column, ts) index per scope serves every window query."""

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


class ReservationRow(SQLModel, table=True):
    __tablename__ = "gateway_reservations"

    bucket: str = Field(primary_key=True)
    call_id: str = Field(primary_key=True)
    ts: float = Field(index=True)


class SqlStateStore(StateStore):
    """State in the gateway database; serialised write transactions make reservations atomic across processes."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.create([CallRow, ReservationRow])
        q = db.sql
        self._insert = q(
            "INSERT INTO gateway_calls (call_id, ts, tool, user, agent, session, tenant, args) VALUES (?,?,?,?,?,?,?,?)"
        ).replace(" user,", ' "user",')
        self._select = {
            scope: q(
                'SELECT call_id, ts, tool, "user", agent, session, tenant, args FROM gateway_calls '
                f'WHERE "{scope.value}" = ? AND ts > ? ORDER BY ts'
            )
            for scope in Scope
        }
        self._expire = q("DELETE FROM gateway_reservations WHERE bucket = ? AND ts <= ?")
        self._count = q("SELECT COUNT(*) FROM gateway_reservations WHERE bucket = ?")
        self._reserve = q("INSERT INTO gateway_reservations (bucket, call_id, ts) VALUES (?, ?, ?)")
        self._release = q("DELETE FROM gateway_reservations WHERE bucket = ? AND call_id = ?")

    def record(self, call: CallRecord) -> None:
        with self.db.write("gateway_calls") as cur:
            self.insert(cur, call)

    def insert(self, cur: Any, call: CallRecord) -> None:
        """Insert within the caller's open transaction (the gateway piggybacks it on the audit commit)."""
        row = (call.call_id, call.ts, call.tool, call.user, call.agent, call.session, call.tenant)
        cur.execute(self._insert, (*row, canonical.dumps(call.args)))

    def calls(self, scope: Scope, key: str, since: float) -> list[CallRecord]:
        with self.db.read() as cur:
            cur.execute(self._select[scope], (key, since))
            rows = cur.fetchall()
        names = ("call_id", "ts", "tool", "user", "agent", "session", "tenant")
        return [CallRecord(**dict(zip(names, r[:7], strict=True)), args=json.loads(r[7])) for r in rows]

    def reserve(self, bucket: str, limit: int, window_s: float, call_id: str) -> bool:
        now = time.time()
        with self.db.write(bucket) as cur:
            cur.execute(self._expire, (bucket, now - window_s))
            cur.execute(self._count, (bucket,))
            if cur.fetchone()[0] >= limit:
                return False
            cur.execute(self._reserve, (bucket, call_id, now))
        return True

    def release(self, bucket: str, call_id: str) -> None:
        with self.db.write(bucket) as cur:
            cur.execute(self._release, (bucket, call_id))


# Redis: server time (TIME) keeps machines with skewed clocks consistent.
_RESERVE_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000) + 1000)
  return 1
end
return 0
"""


class RedisStateStore(StateStore):
    """State in Redis: a sorted set of calls per scope key, a sorted set per rate-limit bucket."""

    def __init__(self, url: str, *, prefix: str = "agentcore:gw", retention_s: float = 8 * 86400) -> None:
        try:
            import redis
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Redis state needs the redis client: pip install 'agentcore-governance[redis]'") from exc
        self.client: Any = redis.Redis.from_url(url)
        self.prefix = prefix
        self.retention_s = retention_s
        self._reserve = self.client.register_script(_RESERVE_LUA)

    def _key(self, scope: Scope, key: str) -> str:
        return f"{self.prefix}:calls:{scope.value}:{key}"

    def record(self, call: CallRecord) -> None:
        member = canonical.dumps(call.model_dump())
        pipe = self.client.pipeline(transaction=True)
        for scope in Scope:
            key = call.key(scope)
            if key is not None:
                name = self._key(scope, key)
                pipe.zadd(name, {member: call.ts})
                pipe.zremrangebyscore(name, "-inf", call.ts - self.retention_s)
                pipe.expire(name, int(self.retention_s) + 60)
        pipe.execute()

    def calls(self, scope: Scope, key: str, since: float) -> list[CallRecord]:
        members = self.client.zrangebyscore(self._key(scope, key), f"({since}", "+inf")
        return [CallRecord.model_validate_json(m) for m in members]

    def reserve(self, bucket: str, limit: int, window_s: float, call_id: str) -> bool:
        return bool(self._reserve(keys=[f"{self.prefix}:rl:{bucket}"], args=[limit, window_s, call_id]))

    def release(self, bucket: str, call_id: str) -> None:
        self.client.zrem(f"{self.prefix}:rl:{bucket}", call_id)

    def close(self) -> None:
        self.client.close()


def open_store(url: str | None, db: Database) -> StateStore:
    """``None`` keeps state in the gateway database; a ``redis://`` / ``rediss://`` URL uses Redis."""
    if url is None:
        return SqlStateStore(db)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStateStore(url)
    return SqlStateStore(Database(url, durability=db.durability))
