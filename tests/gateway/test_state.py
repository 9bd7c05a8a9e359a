"""State stores: call history windows and atomic reservations, on SQLite, PostgreSQL and Redis."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentcore.gateway.context import GatewayContext
from agentcore.gateway.db import Database
from agentcore.gateway.state import CallRecord, RedisStateStore, SqlStateStore, StateStore
from agentcore.policies.context import Scope


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    if request.param == "sqlite":
        made: StateStore = SqlStateStore(Database(str(tmp_path / "s.db")))
    elif request.param == "postgres":
        made = SqlStateStore(Database(request.getfixturevalue("pg_url")))
    else:
        made = RedisStateStore(request.getfixturevalue("redis_url"), prefix=request.getfixturevalue("redis_prefix"))
    yield made
    made.close()


def _call(
    tool: str, ts: float, user: str = "u1", session: str | None = "s1", tenant: str | None = None, **args: float
) -> CallRecord:
    return CallRecord(
        call_id=uuid.uuid4().hex, ts=ts, tool=tool, user=user, agent="bot", session=session, tenant=tenant, args=args
    )


def test_history_counts_sums_and_last_call(store: StateStore) -> None:
    now = time.time()
    for record in [
        _call("refunds.issue", now - 7200, amount=900),  # outside a 1 h window
        _call("refunds.issue", now - 60, amount=300),
        _call("refunds.issue", now - 30, amount=200.5),
        _call("crm.lookup", now - 10),
        _call("refunds.issue", now - 5, user="u2", session="s2", amount=1000),
    ]:
        store.record(record)
    ctx = GatewayContext(store)
    at = datetime.fromtimestamp(now, tz=UTC)
    assert ctx.count(["refunds.*"], Scope.USER, "u1", 3600, at, tenant=None) == 2
    assert ctx.count(["*"], Scope.SESSION, "s1", 3600, at, tenant=None) == 3
    assert ctx.count(["refunds.issue"], Scope.USER, "u1", 86400, at, tenant=None) == 3
    assert ctx.total(["refunds.issue"], ["amount"], Scope.USER, "u1", 3600, at, tenant=None) == pytest.approx(500.5)
    assert ctx.total(["refunds.issue"], ["amount"], Scope.AGENT, "bot", 3600, at, tenant=None) == pytest.approx(1500.5)
    last = ctx.last_call(["crm.lookup"], Scope.USER, "u1", at, tenant=None)
    assert last is not None and abs(last.timestamp() - (now - 10)) < 1e-3
    assert ctx.last_call(["slack.*"], Scope.USER, "u1", at, tenant=None) is None


def test_one_id_in_two_tenants_is_two_histories(store: StateStore) -> None:
    """Ids are often unique within a tenant only: each tenant's u1 (and bot, and s1) reads its own calls, and the
    calls kept before reads were tenant-qualified are read in place (nothing is reset)."""
    now = time.time()
    amounts = {"acme": 300.0, "globex": 700.0, None: 50.0}
    for tenant, amount in amounts.items():
        store.record(_call("refunds.issue", now - 30, tenant=tenant, amount=amount))
    store.record(_call("refunds.issue", now - 20, tenant="acme", amount=1.0))
    ctx, at = GatewayContext(store), datetime.fromtimestamp(now, tz=UTC)
    for tenant, amount in amounts.items():
        extra = 1.0 if tenant == "acme" else 0.0
        for scope, key in [(Scope.USER, "u1"), (Scope.AGENT, "bot"), (Scope.SESSION, "s1")]:
            assert ctx.total(["*"], ["amount"], scope, key, 3600, at, tenant=tenant) == amount + extra
        assert len(store.calls(Scope.USER, "u1", 0, tenant=tenant)) == (2 if extra else 1)
    assert ctx.count(["*"], Scope.TENANT, "acme", 3600, at, tenant="acme") == 2
    assert ctx.count(["*"], Scope.USER, "u1", 3600, at, tenant="initech") == 0


def test_a_section_reserves_atomically_and_release_undoes_it(store: StateStore) -> None:
    keys = {Scope.USER: "u1", Scope.SESSION: "s1"}
    with store.atomic(keys) as view:
        assert abs(view.now - time.time()) < 5  # the store's clock (the same host here)
        kept = _call("notes.add", view.now)
        view.reserve(kept)
    with pytest.raises(RuntimeError), store.atomic(keys) as view:  # a failed section keeps nothing
        view.reserve(_call("notes.add", view.now))
        raise RuntimeError("denied later")
    assert [c.call_id for c in store.calls(Scope.SESSION, "s1", 0, tenant=None)] == [kept.call_id]
    store.release(kept)
    assert store.calls(Scope.USER, "u1", 0, tenant=None) == []


def test_missing_resolver_detector_and_ledger_raise_for_fail_closed(tmp_path: Path) -> None:
    ctx = GatewayContext(SqlStateStore(Database(str(tmp_path / "c.db"))))
    at = datetime.now(UTC)
    with pytest.raises(LookupError, match="resolver"):
        ctx.resolve("order", "o1")
    with pytest.raises(LookupError, match="detector"):
        ctx.detect("toxicity", "hi")
    with pytest.raises(LookupError, match="ledger"):
        ctx.spend(Scope.USER, "u", at, at, tenant=None)
    ctx.resolvers["order"] = lambda key: {"status": "pending", "id": key}
    ctx.detectors["toxicity"] = lambda text: 0.25
    ctx.spend_source = lambda scope, key, tenant, since, now: 1.5
    assert ctx.resolve("order", "o1") == {"status": "pending", "id": "o1"}
    assert ctx.detect("toxicity", "hi") == 0.25
    assert ctx.spend(Scope.USER, "u", at, at, tenant=None) == 1.5


HAMMER = textwrap.dedent(
    """
    import sys, uuid
    from agentcore.gateway.db import Database
    from agentcore.gateway.state import CallRecord, RedisStateStore, SqlStateStore
    from agentcore.policies.context import Scope
    backend, where, prefix = sys.argv[1:4]
    store = RedisStateStore(where, prefix=prefix) if backend == "redis" else SqlStateStore(Database(where))
    kept = 0
    for _ in range(25):  # check and reserve: at most 10 calls of u1 in the last minute
        with store.atomic({Scope.USER: "u1"}) as view:
            if len(view.calls(Scope.USER, "u1", view.now - 60, tenant=None)) < 10:
                view.reserve(CallRecord(call_id=uuid.uuid4().hex, ts=view.now, tool="t", user="u1"))
                kept += 1
    print(kept)
    """
)


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_four_processes_reserve_exactly_ten(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Separate interpreters (not forks of this multi-threaded test process) race on one state key."""
    if backend != "redis":
        where = str(tmp_path / "shared.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
        prefix = ""
        SqlStateStore(Database(where)).close()  # create the schema once
    else:
        where, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
    procs = [
        subprocess.Popen([sys.executable, "-c", HAMMER, backend, where, prefix], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    allowed = [int(proc.communicate(timeout=120)[0]) for proc in procs]
    assert sum(allowed) == 10, allowed


def test_sql_history_records_are_built_once_unless_their_arguments_are_large(tmp_path: Path) -> None:
    store = SqlStateStore(Database(str(tmp_path / "s.db")))
    now = time.time()
    small = CallRecord(call_id=uuid.uuid4().hex, ts=now - 2, tool="t", user="u", args={"amount": 5})
    large = CallRecord(call_id=uuid.uuid4().hex, ts=now - 1, tool="t", user="u", args={"note": "x" * 5000})
    store.record(small)
    store.record(large)
    first, second = store.calls(Scope.USER, "u", 0, tenant=None), store.calls(Scope.USER, "u", 0, tenant=None)
    assert first == second == [small, large]
    assert first[0] is second[0]  # read again by every later call in its window: built once
    assert first[1] is not second[1]  # 5,000 characters of arguments: not kept in memory
    store.release(small)
    assert store.calls(Scope.USER, "u", 0, tenant=None) == [large]  # a released call is gone, whatever was built before
    store.db.close()


@pytest.mark.parametrize("scope", list(Scope))
def test_sqlite_reads_a_window_through_its_scopes_index(scope: Scope, tmp_path: Path) -> None:
    """Not the tenant's index, which holds every call of the tenant (SQLite has no statistics to tell)."""
    store = SqlStateStore(Database(str(tmp_path / "s.db")))
    with store.db.read() as cur:
        cur.execute(f"EXPLAIN QUERY PLAN {store._select[scope]}", ("k", "t", 0.0))
        plan = " ".join(str(row[-1]) for row in cur.fetchall())
    assert f"ix_gateway_calls_{scope.value}_ts" in plan, plan
    store.db.close()


def test_forget_deletes_the_subjects_calls_in_the_tenant_from_every_scope(store: StateStore) -> None:
    """Erasure reaches the history on every backend: the subject's calls in one tenant, without one, or in every
    tenant, read by user, agent, session and tenant alike; everyone else's stay. Ids are read canonical."""
    now = time.time()
    for tenant in ("acme", "globex", None):
        store.record(_call("notes.add", now - 30, user="bob", tenant=tenant, amount=1))
        store.record(_call("notes.add", now - 20, user="alice", tenant=tenant, amount=2))
    store.record(_call("notes.add", now - 10, user="bob", session="s2", tenant="acme", amount=3))

    def users(scope: Scope, key: str, tenant: str | None) -> list[str]:
        return sorted(c.user for c in store.calls(scope, key, 0, tenant=tenant))

    assert store.forget("\uff42ob", "ac\u200bme") == 2
    assert users(Scope.USER, "bob", "acme") == [] and users(Scope.SESSION, "s2", "acme") == []
    for scope, key in [(Scope.AGENT, "bot"), (Scope.SESSION, "s1"), (Scope.TENANT, "acme")]:
        assert users(scope, key, "acme") == ["alice"]
    assert users(Scope.AGENT, "bot", "globex") == users(Scope.AGENT, "bot", None) == ["alice", "bob"]
    assert store.forget("bob", None) == 1 and users(Scope.AGENT, "bot", None) == ["alice"]
    assert users(Scope.USER, "bob", "globex") == ["bob"]
    assert store.forget("bob") == 1 and store.forget("bob") == 0
    assert [users(Scope.USER, "alice", t) for t in ("acme", "globex", None)] == [["alice"]] * 3
