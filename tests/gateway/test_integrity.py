"""Issue 13, findings 3-5: no tool runs unaudited, stateful rules are exact under concurrency, one clock per store.

Each concurrency test runs on SQLite, PostgreSQL and Redis with threads, concurrent ``acall`` and processes.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import agentcore.policies.model
from agentcore import ApprovalRequired, Gateway, ToolDenied
from agentcore.gateway import OutcomeNotRecorded, ToolExecutionError

REFUNDS = """policy "refunds"
allow refund.
deny refund when sum of amount over refund in the last 24 hours per user plus amount exceeds 2000.
"""
BACKENDS = ["sqlite", "postgres", "redis"]


def _gateway(
    tmp_path: Path,
    backend: str = "sqlite",
    request: pytest.FixtureRequest | None = None,
    policy: str = REFUNDS,
    **options: Any,
) -> Gateway:
    """A gateway whose state lives in ``backend`` (Redis keys under the test's own prefix)."""
    assert backend == "sqlite" or request is not None
    (tmp_path / "p").mkdir(parents=True, exist_ok=True)
    (tmp_path / "p" / "p.policy").write_text(policy)
    database = request.getfixturevalue("pg_url") if request and backend == "postgres" else str(tmp_path / "gw.db")
    state = request.getfixturevalue("redis_url") if request and backend == "redis" else None
    gw = Gateway(tmp_path / "p", database=database, state=state, **options)
    if request and backend == "redis":
        gw.store.prefix = request.getfixturevalue("redis_prefix")  # type: ignore[attr-defined]
    return gw


def _records(gw: Gateway) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gw.audit.export_jsonl()]


def _lifecycle(gw: Gateway) -> list[tuple[str, str | None, str | None]]:
    return [(r["kind"], r["effect"], r["outcome"]) for r in _records(gw)]


TENANTS = """policy "tenants"
allow lookup, refund, export.
limit refund to 2 calls per hour per user.
deny export unless after lookup for the same user within 1 hour.
deny refund when sum of amount over refund in the last 24 hours per user plus amount exceeds 1000.
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_user_id_in_two_tenants_is_two_users(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Ids are often unique within a tenant only: acme's bob spending his caps, or looking a customer up, does
    nothing for globex's bob or for a bob without a tenant (it once did: one history per id)."""
    gw = _gateway(tmp_path, backend, request, policy=TENANTS)
    for name in ("lookup", "refund", "export"):
        gw.tool(lambda **args: "ok", name=name, schema={"type": "object"})
    gw.call("lookup", {}, principal="bob", tenant="acme")
    assert gw.call("export", {}, principal="bob", tenant="acme") == "ok"
    for tenant in ("globex", None):
        with pytest.raises(ToolDenied):
            gw.call("export", {}, principal="bob", tenant=tenant)  # acme's bob looked the customer up
    gw.call("refund", {"amount": 900}, principal="bob", tenant="acme")
    with pytest.raises(ToolDenied, match="deny refund when sum"):
        gw.call("refund", {"amount": 200}, principal="bob", tenant="acme")
    for tenant in ("globex", None):  # each bob has his own sum and his own limit
        gw.call("refund", {"amount": 900}, principal="bob", tenant=tenant)
        gw.call("refund", {"amount": 50}, principal="bob", tenant=tenant)
        with pytest.raises(ToolDenied, match="limit reached"):
            gw.call("refund", {"amount": 10}, principal="bob", tenant=tenant)
    gw.close()


# ---- finding 4: check and reserve are one atomic step -------------------------------------------------------
@pytest.fixture(params=BACKENDS)
def refunds(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Gateway, list[float]]]:
    gw = _gateway(tmp_path, request.param, request)
    ran: list[float] = []

    @gw.tool(name="refund")
    def refund(amount: float) -> float:
        time.sleep(0.02)  # executions overlap: a check that is not atomic lets every call through
        ran.append(amount)
        return amount

    yield gw, ran
    gw.close()


def _eight_threads_refund_600(gw: Gateway, user: str) -> list[Any]:
    """What eight threads, released together, each get back from one refund of 600 (a result or a ToolDenied)."""
    start, outcomes = threading.Barrier(8), []

    def one() -> None:
        start.wait()
        try:
            outcomes.append(gw.call("refund", {"amount": 600}, principal=user))
        except ToolDenied as denied:
            outcomes.append(denied)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_eight_threads_refunding_600_let_exactly_three_through(refunds: tuple[Gateway, list[float]]) -> None:
    gw, ran = refunds
    outcomes = _eight_threads_refund_600(gw, f"u-{uuid.uuid4().hex}")
    assert sum(isinstance(o, ToolDenied) for o in outcomes) == 5 and outcomes.count(600) == 3, outcomes
    assert ran == [600] * 3
    assert gw.audit.verify().ok


def test_a_cap_inside_a_named_condition_is_exact_too(tmp_path: Path) -> None:
    policy = (
        'policy "refunds" version 2\n'
        'define "over the cap" as sum of amount over refund in the last 24 hours per user plus amount exceeds 2000.\n'
        'allow refund.\ndeny refund when "over the cap".\n'
    )
    gw = _gateway(tmp_path, policy=policy)
    gw.tool(lambda amount: time.sleep(0.01) or amount, name="refund", schema={"type": "object"})
    outcomes = _eight_threads_refund_600(gw, "ann")
    assert outcomes.count(600) == 3, outcomes  # the history a definition reads is kept and reserved as well
    gw.close()


def test_eight_concurrent_acalls_let_exactly_three_through(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for backend in BACKENDS:
        gw = _gateway(tmp_path / backend, backend, request)
        ran: list[float] = []

        async def refund(amount: float, ran: list[float] = ran) -> float:
            await asyncio.sleep(0.02)  # the calls interleave here, as the MCP proxy's do
            ran.append(amount)
            return amount

        async def burst(gw: Gateway, user: str) -> list[Any]:
            calls = [gw.acall("refund", {"amount": 600}, principal=user) for _ in range(8)]
            return await asyncio.gather(*calls, return_exceptions=True)

        gw.tool(refund, name="refund", schema={"type": "object", "properties": {"amount": {"type": "number"}}})
        try:
            outcomes = asyncio.run(burst(gw, f"u-{uuid.uuid4().hex}"))
        finally:
            gw.close()
        assert sum(isinstance(o, ToolDenied) for o in outcomes) == 5 and ran == [600] * 3, (backend, outcomes)


PROCESS = textwrap.dedent(
    """
    import sys, time
    from agentcore import ApprovalRequired, Gateway, ToolDenied
    policies, database, state, user = sys.argv[1:5]
    gw = Gateway(policies, database=database, state=state or None)
    gw.tool(lambda amount: time.sleep(0.02) or amount, name="refund", schema={"type": "object"})
    print("ready", flush=True)
    sys.stdin.readline()  # all four start together
    allowed = 0
    for _ in range(2):
        try:
            gw.call("refund", {"amount": 600}, principal=user)
            allowed += 1
        except ToolDenied:
            pass
    gw.close()
    print(allowed)
    """
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_four_processes_refunding_600_twice_let_exactly_three_through(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    _gateway(tmp_path, backend, request).close()  # the schema, once
    database = request.getfixturevalue("pg_url") if backend == "postgres" else str(tmp_path / "gw.db")
    state = request.getfixturevalue("redis_url") if backend == "redis" else ""
    user = f"u-{uuid.uuid4().hex}"
    argv = [sys.executable, "-c", PROCESS, str(tmp_path / "p"), database, state, user]
    procs = [subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
        assert sum(int(proc.communicate(timeout=120)[0]) for proc in procs) == 3
    finally:
        if state:
            import redis

            client = redis.Redis.from_url(state)
            for key in client.scan_iter(f"*{user}*"):
                client.delete(key)
            client.close()


def test_a_reservation_is_released_when_the_call_is_denied_later(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    gw.tool(lambda amount: amount, name="refund", schema={"type": "object"})
    real_append = gw.audit.append

    def refuse_the_decision(event: Any) -> int:
        if event.outcome == "started":
            raise sqlite3.OperationalError("database or disk is full")
        return real_append(event)

    gw.audit.append = refuse_the_decision  # type: ignore[method-assign]
    with pytest.raises(ToolDenied, match="disk is full"):
        gw.call("refund", {"amount": 1500}, principal="ann")
    gw.audit.append = real_append  # type: ignore[method-assign]
    assert gw.call("refund", {"amount": 1500}, principal="ann") == 1500  # the denied call's 1500 was given back
    gw.close()


def test_a_failed_call_gives_its_reservation_back(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    failing = [True]

    @gw.tool(name="refund", schema={"type": "object"})
    def refund(amount: float) -> float:
        if failing.pop():
            raise RuntimeError("payment provider down")
        return amount

    with pytest.raises(ToolExecutionError):
        gw.call("refund", {"amount": 1500}, principal="ann")
    failing.append(False)
    assert gw.call("refund", {"amount": 1500}, principal="ann") == 1500  # the failed 1500 does not count
    gw.close()


REFUSE_STARTED = "CREATE TRIGGER disk_full BEFORE INSERT ON gateway_audit WHEN NEW.outcome = 'started' " \
    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"  # fmt: skip


def test_an_allowed_stateful_call_commits_its_reservation_and_decision_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw = _gateway(tmp_path, outcome_delay_s=60)  # the outcome is committed when flushed, not by the flusher
    gw.tool(lambda amount: amount, name="refund", schema={"type": "object"})
    gw.call("refund", {"amount": 100}, principal="ann")  # ann's sealing key exists from now on
    gw.flush()
    commits: list[str] = []
    real_commit, real_alone = gw.db._commit, gw.db.execute_alone
    monkeypatch.setattr(gw.db, "_commit", lambda: commits.append("transaction") or real_commit())
    monkeypatch.setattr(gw.db, "execute_alone", lambda *a: commits.append("statement") or real_alone(*a))
    assert gw.call("refund", {"amount": 100}, principal="ann") == 100
    assert commits == ["transaction"]  # reservation + started record, before the tool ran
    gw.flush()
    assert commits == ["transaction", "statement"]  # then the outcome
    assert _lifecycle(gw)[-2:] == [("decision", "allow", "started"), ("execution", None, "ok")]
    assert gw.audit.verify().ok
    gw.close()


def test_a_started_record_refused_inside_the_state_section_takes_the_reservation_with_it(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    ran: list[float] = []
    gw.tool(lambda amount: ran.append(amount) or amount, name="refund", schema={"type": "object"})
    assert gw.call("refund", {"amount": 500}, principal="ann") == 500
    with sqlite3.connect(tmp_path / "gw.db") as other:
        other.execute(REFUSE_STARTED)
    with pytest.raises(ToolDenied, match="disk is full"):
        gw.call("refund", {"amount": 1500}, principal="ann")
    assert ran == [500]  # nothing ran without its durable decision
    with sqlite3.connect(tmp_path / "gw.db") as other:
        other.execute("DROP TRIGGER disk_full")
        assert other.execute("SELECT COUNT(*) FROM gateway_calls").fetchone()[0] == 1  # rolled back together
    assert gw.call("refund", {"amount": 1500}, principal="ann") == 1500  # 500 + 1500: the cap, exactly
    with pytest.raises(ToolDenied, match="exceeds 2000"):
        gw.call("refund", {"amount": 1}, principal="ann")
    assert gw.audit.verify().ok
    gw.close()


# ---- finding 3: durable decision before the side effect; outcomes never lost ---------------------------------
FAIL_OUTCOMES = "CREATE TRIGGER disk_full BEFORE INSERT ON gateway_audit WHEN NEW.kind = 'execution' " \
    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"  # fmt: skip


def test_a_failing_outcome_write_raises_outcome_not_recorded_and_completes_later(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)  # the default (DESIGN.md §8.2): the outcome is committed before the call returns
    ran: list[float] = []
    gw.tool(lambda amount: ran.append(amount) or amount, name="refund", schema={"type": "object"})
    with gw.db.write("test") as cur:
        cur.execute(FAIL_OUTCOMES)
    results = []
    for _ in range(3):
        with pytest.raises(OutcomeNotRecorded) as info:
            gw.call("refund", {"amount": 100}, principal="ann")
        assert info.value.result == 100 and "Do not retry" in str(info.value)
        results.append(info.value.audit_id)
    assert ran == [100, 100, 100]
    assert _lifecycle(gw) == [("decision", "allow", "started")] * 3  # started, outcome unknown
    with gw.db.write("test") as cur:
        cur.execute("DROP TRIGGER disk_full")  # storage is back
    assert gw.call("refund", {"amount": 100}, principal="ann") == 100  # the next write completes the others first
    records = _records(gw)
    finished = [r["call_id"] for r in records if r["kind"] == "execution"]
    assert finished[:3] == results and len(finished) == 4 and gw.audit.verify().ok
    gw.close()


def test_an_approved_call_whose_outcome_waits_is_settled_when_storage_returns(tmp_path: Path) -> None:
    policy = REFUNDS + 'require approval from role "manager" for refund when amount is more than 500.\n'
    gw = _gateway(tmp_path, policy=policy)
    gw.tool(lambda amount: amount, name="refund", schema={"type": "object"})
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("refund", {"amount": 800}, principal="ann")
    with gw.db.write("test") as cur:
        cur.execute(FAIL_OUTCOMES)
    with pytest.raises(OutcomeNotRecorded) as info:
        gw.approvals.approve(pending.value.approval_id, by={"id": "mona", "roles": ["manager"]})
    assert info.value.result == 800 and gw.approvals.get(pending.value.approval_id).status == "executing"
    with gw.db.write("test") as cur:
        cur.execute("DROP TRIGGER disk_full")
    assert gw.record_pending_outcomes() == 0
    settled = gw.approvals.get(pending.value.approval_id)
    assert (settled.status, settled.result) == ("executed", 800)
    assert gw.approvals.execute(pending.value.approval_id) == 800  # the stored result; it never runs twice
    gw.close()


LOCKER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    sys.stdin.readline()
    conn.execute("ROLLBACK")
    """
)


def test_database_locked_by_another_process_after_the_tool_ran(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)  # the default: the caller learns that the outcome could not be recorded
    with gw.db.lock:
        gw.db._connection().execute("PRAGMA busy_timeout=200")  # do not wait the default 30 s in a test
    holder: list[subprocess.Popen[str]] = []

    @gw.tool(name="refund")
    def refund(amount: float) -> float:
        argv = [sys.executable, "-c", LOCKER, str(tmp_path / "gw.db")]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        holder.append(proc)
        return amount

    with pytest.raises(OutcomeNotRecorded) as info:
        gw.call("refund", {"amount": 50}, principal="ann")
    assert info.value.result == 50
    assert gw.record_pending_outcomes() == 1  # still locked: the outcome waits
    holder[0].communicate("\n", timeout=30)
    assert gw.record_pending_outcomes() == 0
    assert _lifecycle(gw) == [("decision", "allow", "started"), ("execution", None, "ok")]
    gw.close()


def _dead_redis_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"redis://127.0.0.1:{sock.getsockname()[1]}/0"


def test_redis_down_after_the_tool_ran_keeps_the_sql_audit(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    import redis

    gw = _gateway(tmp_path, "redis", request)

    @gw.tool(name="refund")
    def refund(amount: float) -> float:
        gw.store.client = redis.Redis.from_url(_dead_redis_url())  # type: ignore[attr-defined]
        return amount

    assert gw.call("refund", {"amount": 70}, principal=f"u-{uuid.uuid4().hex}") == 70
    assert _lifecycle(gw) == [("decision", "allow", "started"), ("execution", None, "ok")]
    with pytest.raises(ToolDenied, match="unavailable"):  # down before execution: denied, audited
        gw.call("refund", {"amount": 70}, principal="ann")
    assert _lifecycle(gw)[-1] == ("decision", "deny", "denied") and gw.audit.verify().ok
    gw.close()


def test_write_ahead_is_not_an_option_any_more(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="write_ahead"):
        Gateway(None, database=str(tmp_path / "gw.db"), write_ahead=False)  # type: ignore[call-arg]


# ---- finding 5: one clock per store ---------------------------------------------------------------------------
class _Ahead(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return datetime.now(tz) + timedelta(seconds=120)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_process_clock_120_s_ahead_gets_no_second_window(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gw = _gateway(tmp_path, backend, request, 'policy "p"\nallow t.hit.\nlimit t.hit to 1 calls per minute per user.\n')
    gw.tool(lambda: "hit", name="t.hit", schema={"type": "object"})
    user = f"u-{uuid.uuid4().hex}"
    assert gw.call("t.hit", {}, principal=user) == "hit"
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 120)  # this process's clock runs 2 minutes ahead
    monkeypatch.setattr(agentcore.policies.model, "datetime", _Ahead)
    with pytest.raises(ToolDenied, match="limit"):
        gw.call("t.hit", {}, principal=user)
    gw.close()


def test_sqlite_refuses_a_timestamp_that_goes_backwards_for_a_key(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    gw.tool(lambda amount: amount, name="refund", schema={"type": "object"})
    from agentcore.gateway.state import CallRecord

    gw.store.record(CallRecord(call_id="ahead", ts=time.time() + 120, tool="refund", user="ann", args={"amount": 1}))
    with pytest.raises(ToolDenied, match="clock went backwards"):
        gw.call("refund", {"amount": 10}, principal="ann")
    assert _lifecycle(gw) == [("decision", "deny", "error")]
    assert gw.call("refund", {"amount": 10}, principal="bob") == 10  # other keys are unaffected
    gw.close()
