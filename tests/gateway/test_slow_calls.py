"""A slow tool, resolver or audit write holds up only its own call: admission, sync tools and the outcome's commit
run off the event loop (admission and outcome on it only when nothing in them can wait), and a resolver that
misses its deadline fails closed into an audited deny."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agentcore import Gateway, OutcomeNotRecorded, ToolDenied
from agentcore.gateway.audit import AuditEvent
from agentcore.gateway.mcp import McpProxy, load_config

Factory = Callable[..., tuple[Gateway, dict[str, int]]]
SECRET = "test-secret-" + "s" * 32
POLICY = """policy "slow"
allow slow.sleep.
allow slow.lookup when order(order_id).status is "pending".
allow slow.record.
allow fast.echo.
"""


def _proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> McpProxy:
    monkeypatch.setenv("GW_SLOW_SECRET", SECRET)
    (tmp_path / "slow.policy").write_text(POLICY)
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[gateway]\npolicies = ["slow.policy"]\ndatabase = "{tmp_path / "gw.db"}"\nresolver_timeout_s = 30\n'
        '[gateway.auth]\nalgorithms = ["HS256"]\nsecret_env = "GW_SLOW_SECRET"\n'
    )
    return McpProxy(load_config(config))


@pytest.mark.parametrize("slow", ["slow_sleep", "slow_lookup", "slow_record"])
def test_another_clients_tools_list_completes_while_a_slow_call_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: str
) -> None:
    """The slow part (a sync tool, the resolver its admission needs, or the commit of its outcome, which may wait
    for another caller's batch) blocks in a thread until released; the other client's listing must complete before
    that. On a blocked event loop it would only after."""
    proxy = _proxy(tmp_path, monkeypatch)
    started, release, events = threading.Event(), threading.Event(), []

    def block(what: str) -> None:
        started.set()
        release.wait(5)  # bounded, so a blocked loop makes the test fail instead of hang
        events.append(what)

    @proxy.gateway.tool(name="slow.sleep")
    def sleep() -> str:
        block("tool finished")
        return "slept"

    @proxy.gateway.tool(name="slow.lookup")
    def lookup(order_id: str) -> str:
        return f"found {order_id}"

    @proxy.gateway.tool(name="slow.record")
    def record() -> str:
        return "ran"

    append = proxy.gateway.audit.append

    def slow_append(event: AuditEvent, also: Callable[[Any], None] | None = None) -> int:
        if (event.kind, event.tool) == ("execution", "slow.record"):
            block("outcome recorded")
        return append(event, also)

    monkeypatch.setattr(proxy.gateway.audit, "append", slow_append)
    monkeypatch.setattr(proxy.gateway, "outcome_delay_s", 0)  # pinned: a deferred outcome has no caller to stall

    @proxy.gateway.tool(name="fast.echo")
    def echo(text: str) -> str:
        return text

    @proxy.gateway.resolver("order")
    def order(order_id: str) -> dict[str, str]:
        block("resolver finished")
        return {"status": "pending"}

    arguments = {"slow_sleep": {}, "slow_lookup": {"order_id": "o1"}, "slow_record": {}}[slow]
    app = proxy.http_app()

    def client(user: str) -> tuple[httpx2.AsyncClient, Client]:
        token = jwt.encode({"sub": user, "exp": int(time.time()) + 300}, SECRET, algorithm="HS256")
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), headers={"Authorization": f"Bearer {token}"})
        return http, Client(streamable_http_client("http://127.0.0.1:8765/mcp", http_client=http))

    async def main() -> None:
        (http_a, a), (http_b, b) = client("bob"), client("carol")
        async with proxy.server.session_manager.run(), http_a, http_b, a, b:
            call = asyncio.create_task(a.call_tool(slow, arguments))
            assert await asyncio.to_thread(started.wait, 5)
            listed = await b.list_tools()
            echoed = await b.call_tool("fast_echo", {"text": "hi"})
            events.append("other client served")
            release.set()
            result = await call
        assert {t.name for t in listed.tools} == {"slow_sleep", "slow_lookup", "slow_record", "fast_echo"}
        assert not echoed.is_error and not result.is_error
        assert events[0] == "other client served"

    try:
        asyncio.run(main())
    finally:
        release.set()
        proxy.gateway.close()


def test_a_resolver_past_its_deadline_fails_closed_and_is_audited(make_gateway: Factory) -> None:
    gw, runs = make_gateway(resolver_timeout_s=0.2)
    release = threading.Event()

    @gw.resolver("order")
    def stuck(order_id: str) -> dict[str, str]:
        release.wait(5)
        return {"status": "pending"}

    try:
        with pytest.raises(ToolDenied, match=r"did not answer within 0\.2s"):
            gw.call("orders.cancel", {"order_id": "o1"}, principal={"id": "alice", "roles": ["support"]})
        with pytest.raises(ToolDenied):
            asyncio.run(gw.acall("orders.cancel", {"order_id": "o1"}, principal={"id": "alice", "roles": ["support"]}))
    finally:
        release.set()
    assert runs == {}
    records = [json.loads(line) for line in gw.audit.export_jsonl()]
    assert [(r["tool"], r["effect"], r["outcome"]) for r in records] == [("orders.cancel", "deny", "denied")] * 2
    assert all("resolver 'order' did not answer" in json.dumps(r["detail"]) for r in records)


def test_resolver_timeout_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="resolver_timeout_s"):
        Gateway(None, database=str(tmp_path / "gw.db"), resolver_timeout_s=0)


def _steps_on(gw: Gateway, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Record each admission and outcome of ``gw``: (step, whether it ran on the event loop's thread)."""
    steps: list[tuple[str, bool]] = []
    loop_thread = threading.get_ident()  # asyncio.run below runs the loop in this thread
    for step in ("_admit", "_complete"):
        original = getattr(gw, step)

        def traced(*args: Any, _step: str = step, _original: Any = original, **kwargs: Any) -> Any:
            steps.append((_step, threading.get_ident() == loop_thread))
            return _original(*args, **kwargs)

        monkeypatch.setattr(gw, step, traced)
    return steps


def _echo_gateway(tmp_path: Path) -> Gateway:
    (tmp_path / "p.policy").write_text('policy "p"\nallow t.echo.\n')
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"), reload=False)

    @gw.tool(name="t.echo")
    async def echo(text: str) -> str:
        return text

    return gw


def test_admission_and_outcome_run_on_the_loop_when_nothing_can_make_them_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No resolver, no stateful rule, SQLite without fsync and every lock free: both steps run on the loop (two
    thread hand-offs fewer per call), decided and audited exactly as in a thread."""
    gw = _echo_gateway(tmp_path)
    steps = _steps_on(gw, monkeypatch)
    try:
        assert asyncio.run(gw.acall("t.echo", {"text": "hi"}, principal="ann")) == "hi"
        assert steps == [("_admit", True), ("_complete", True)]
        records = [json.loads(line) for line in gw.audit.export_jsonl()]
        assert [(r["kind"], r["outcome"]) for r in records] == [("decision", "started"), ("execution", "ok")]
        assert gw.audit.verify().records == 2
    finally:
        gw.close()


def test_an_outcome_the_database_refuses_on_the_loop_is_kept_and_completed_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outcome's write fails while its step holds the group commit's lead on the loop: the caller gets
    ``OutcomeNotRecorded`` with the result (the tool ran), the record stays "started", and once storage returns
    the next call (its admission in a thread while a refused outcome waits) completes it first."""
    gw = _echo_gateway(tmp_path)
    steps = _steps_on(gw, monkeypatch)
    with gw.db.write("test") as cursor:
        cursor.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT ON gateway_audit WHEN NEW.kind = 'execution' "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
    try:
        with pytest.raises(OutcomeNotRecorded) as refused:
            asyncio.run(gw.acall("t.echo", {"text": "hi"}, principal="ann"))
        assert refused.value.result == "hi" and steps == [("_admit", True), ("_complete", True)]
        with gw.db.write("test") as cursor:
            cursor.execute("DROP TRIGGER disk_full")  # storage is back
        assert asyncio.run(gw.acall("t.echo", {"text": "again"}, principal="ann")) == "again"
        assert steps[2] == ("_admit", False)  # a waiting outcome: admission in a thread, which writes it first
        records = [json.loads(line) for line in gw.audit.export_jsonl()]
        executions = [r["call_id"] for r in records if r["kind"] == "execution"]
        assert executions[0] == refused.value.audit_id and len(executions) == 2 and gw.audit.verify().ok
    finally:
        gw.close()


def test_a_step_that_would_wait_for_the_database_goes_to_a_thread_and_the_loop_carries_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread holds the database connection (a long write, a WAL restart): the admission must not wait for
    it on the loop. It waits in a thread; meanwhile the loop keeps serving (the ticker ticks)."""
    gw = _echo_gateway(tmp_path)
    steps = _steps_on(gw, monkeypatch)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gw.db.lock:
            held.set()
            release.wait(5)  # bounded: a blocked loop makes the test fail instead of hang

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(5)

    async def main() -> tuple[str, int]:
        ticks = 0
        call = asyncio.create_task(gw.acall("t.echo", {"text": "hi"}, principal="ann"))
        while ticks < 5:
            await asyncio.sleep(0.01)
            ticks += 1
        assert not call.done()  # still waiting for the connection, and the loop is not
        release.set()
        return await call, ticks

    try:
        assert asyncio.run(main()) == ("hi", 5)
        assert steps[0] == ("_admit", False)
        assert gw.audit.verify().records == 2
    finally:
        release.set()
        holder.join(5)
        gw.close()


def test_with_a_resolver_admission_stays_in_a_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver is user code that may wait on the network: admission keeps running off the loop."""
    gw = _echo_gateway(tmp_path)

    @gw.resolver("order")
    def order(order_id: str) -> dict[str, str]:
        return {"status": "pending"}

    steps = _steps_on(gw, monkeypatch)
    try:
        assert asyncio.run(gw.acall("t.echo", {"text": "hi"}, principal="ann")) == "hi"
        assert steps == [("_admit", False), ("_complete", False)]
    finally:
        gw.close()


def test_while_another_call_is_in_flight_the_steps_go_to_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With other calls in flight, a thread lets the loop serve them during a commit (and their records share
    commits): only a call alone runs its steps on the loop."""
    (tmp_path / "p.policy").write_text('policy "p"\nallow t.wait.\nallow t.echo.\n')
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"), reload=False)

    async def main() -> list[str]:
        inside, release = asyncio.Event(), asyncio.Event()

        @gw.tool(name="t.wait")
        async def wait() -> str:
            inside.set()
            await release.wait()
            return "waited"

        @gw.tool(name="t.echo")
        async def echo(text: str) -> str:
            return text

        first = asyncio.create_task(gw.acall("t.wait", {}, principal="ann"))
        await inside.wait()
        second = await gw.acall("t.echo", {"text": "hi"}, principal="bob")
        release.set()
        return [await first, second]

    steps = _steps_on(gw, monkeypatch)
    try:
        assert asyncio.run(main()) == ["waited", "hi"]
        assert steps == [("_admit", True), ("_admit", False), ("_complete", False), ("_complete", True)]
        assert gw._in_flight == 0
    finally:
        gw.close()


def test_a_due_policy_reload_sends_the_admission_to_a_thread_and_never_happens_while_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reload parses the bundle and records its status in the database: never inside a step that holds the
    database on the loop (another thread reloading then would wait for the database, and this one for it)."""
    (tmp_path / "p.policy").write_text('policy "p"\nallow t.echo.\n')
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"))

    @gw.tool(name="t.echo")
    async def echo(text: str) -> str:
        return text

    steps = _steps_on(gw, monkeypatch)
    try:
        loaded = gw.policy.current()
        (tmp_path / "p.policy").write_text('policy "p"\ndeny t.echo.\n')
        monkeypatch.setattr(gw.policy, "_next_check", 0.0)  # due now
        with gw.policy.pinned():
            assert gw.policy.current() is loaded  # not reloaded
            assert gw.policy.reload_due()
        with pytest.raises(ToolDenied):
            asyncio.run(gw.acall("t.echo", {"text": "hi"}, principal="ann"))
        assert steps == [("_admit", False)]  # reloaded in a thread, where the new deny applied
        assert gw.policy.current() is not loaded and not gw.policy.reload_due()
    finally:
        gw.close()
