"""A cancelled ``acall`` or ``aexecute``, and a tool interrupted by a BaseException, at each point of the call.

Cancellation cannot stop a thread: an admission that was running in one when its caller was cancelled commits
its ``started`` decision and its reservation all the same. Each test hits its point with events and one-worker
executors (no sleep or timeout has to be long enough), then reads the audit, the state store (through the next
call's decision) and the approval store, and checks the chain.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentcore import ApprovalRequired, Gateway, ToolDenied
from agentcore.gateway import ApprovalError, ToolExecutionError
from tests.gateway.test_integrity import BACKENDS, _gateway, _lifecycle, _records

LIMITED = """policy "p"
allow lookup.
limit lookup to 1 calls per hour per user.
deny lookup when account(id).frozen is true.
"""
APPROVED = LIMITED + 'require approval from role "manager" for lookup.\n'
STARTED = ("decision", "allow", "started")
MANAGER = {"id": "mona", "roles": ["manager"]}


class Gate:
    """A resolver that, once ``armed``, tells the test it is deciding a call and holds it until ``proceed``."""

    def __init__(self) -> None:
        self.armed, self.entered, self.proceed = threading.Event(), threading.Event(), threading.Event()

    def __call__(self, key: Any) -> dict[str, Any]:
        if self.armed.is_set():
            self.entered.set()
            self.proceed.wait()
        return {"frozen": False}


@pytest.fixture
def side() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    """A thread for the test's own waits, off the one-worker executor the gateway's admission is queued on."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        yield pool


def _limited(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest | None, policy: str = LIMITED, name: str = "lookup"
) -> tuple[Gateway, Gate, list[str]]:
    """A gateway whose ``name`` tool (async) notes each run, with the ``account`` resolver a ``Gate``."""
    gw = _gateway(tmp_path, backend, request, policy=policy)
    gate, runs = Gate(), []
    gw.resolver("account")(gate)

    @gw.tool(name=name, schema={"type": "object"})
    async def lookup(id: str) -> str:
        runs.append(id)
        return id

    return gw, gate, runs


async def _cancel_in_admission(
    gw: Gateway,
    gate: Gate,
    side: concurrent.futures.Executor,
    started: Any,
    *,
    result_lost: bool,
    scoped: bool = False,
) -> None:
    """Cancel the task ``started()`` makes while its admission is deciding in a thread, or (``result_lost``) once
    that thread has returned its plan and before the task could resume with it: the loop is held meanwhile.
    ``scoped``: by cancelling an anyio cancel scope around the call, as the MCP server does, instead of the task."""
    loop = asyncio.get_running_loop()
    admission = concurrent.futures.ThreadPoolExecutor(1) if result_lost else None
    if admission is not None:  # the loop's own threads are this one worker now; asyncio.run still waits for it
        loop.set_default_executor(admission)
    scope = anyio.CancelScope()

    async def in_scope() -> None:
        with scope:
            await started()

    gate.armed.set()
    task = asyncio.ensure_future(in_scope() if scoped else started())
    await loop.run_in_executor(side, gate.entered.wait)
    hold = threading.Event()
    if admission is not None:
        gate.proceed.set()
        admission.submit(int).result()  # queued behind the admission: it has returned and its result is on its way
    if scoped:
        if admission is not None:  # the settlement queues behind this, and the scope cancels its await at once
            admission.submit(hold.wait)
        scope.cancel()
        await task  # the scope takes its cancellation
        assert scope.cancelled_caught
        hold.set()
    else:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    gate.proceed.set()
    gate.armed.clear()


@pytest.mark.parametrize("scoped", [False, True], ids=["task-cancel", "anyio-scope"])
@pytest.mark.parametrize("result_lost", [False, True], ids=["while-deciding", "result-lost"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_acall_cancelled_during_admission_runs_nothing_and_keeps_no_slot(
    backend: str,
    result_lost: bool,
    scoped: bool,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    side: concurrent.futures.Executor,
) -> None:
    gw, gate, runs = _limited(tmp_path, backend, request)
    call = lambda: gw.acall("lookup", {"id": "a1"}, principal="ann")  # noqa: E731
    asyncio.run(_cancel_in_admission(gw, gate, side, call, result_lost=result_lost, scoped=scoped))
    assert runs == []
    assert _lifecycle(gw) == [STARTED, ("execution", None, "cancelled")]
    assert gw.call("lookup", {"id": "a2"}, principal="ann") == "a2"  # the cancelled call gave its slot back
    with pytest.raises(ToolDenied):
        gw.call("lookup", {"id": "a3"}, principal="ann")  # and the limit still holds
    assert gw.audit.verify().ok and runs == ["a2"]
    gw.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_task_group_cancelling_a_running_tool_records_it_cancelled_and_it_counts(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The tool was started and may have acted: the caller's cancel does not give its place back (else a cancel
    right after each side effect would lift every cap)."""
    gw = _gateway(
        tmp_path, backend, request, policy=LIMITED.replace("deny lookup when account(id).frozen is true.\n", "")
    )
    running, acted = asyncio.Event(), []

    @gw.tool(name="lookup", schema={"type": "object"})
    async def lookup(id: str) -> str:
        acted.append(id)
        if len(acted) == 1:
            running.set()
            await asyncio.Event().wait()  # until cancelled
        return id

    async def sibling() -> None:
        await running.wait()
        raise RuntimeError("sibling failed")

    async def scenario() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(gw.acall("lookup", {"id": "a1"}, principal="ann"))
            group.create_task(sibling())

    with pytest.raises(ExceptionGroup):
        asyncio.run(scenario())
    assert acted == ["a1"]
    records = _lifecycle(gw)
    assert records == [STARTED, ("execution", None, "cancelled")]
    with pytest.raises(ToolDenied):
        gw.call("lookup", {"id": "a2"}, principal="ann")  # the cancelled call used the one slot
    assert gw.audit.verify().ok
    gw.close()


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_a_sync_tool_interrupted_by_a_base_exception_is_recorded_and_counts(
    raised: type[BaseException], tmp_path: Path
) -> None:
    gw = _gateway(tmp_path, policy=LIMITED)
    gw.resolver("account")(Gate())

    @gw.tool(name="lookup", schema={"type": "object"})
    def lookup(id: str) -> str:
        if id == "a1":
            raise raised("stop")
        return id

    with pytest.raises(raised):
        gw.call("lookup", {"id": "a1"}, principal="ann")
    *_, outcome = _records(gw)
    assert (outcome["outcome"], outcome["detail"]["error"]) == ("interrupted", f"{raised.__name__}: stop")
    with pytest.raises(ToolDenied):
        gw.call("lookup", {"id": "a2"}, principal="ann")  # interrupted mid-run: it may have acted, so it counts
    assert gw.audit.verify().ok
    gw.close()


def test_an_approved_call_cancelled_while_it_is_admitted_again_never_runs(
    tmp_path: Path, request: pytest.FixtureRequest, side: concurrent.futures.Executor
) -> None:
    gw, gate, runs = _limited(tmp_path, "sqlite", request, APPROVED)
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("lookup", {"id": "a1"}, principal="ann")
    approval_id = pending.value.approval_id
    gw.approvals.approve(approval_id, by=MANAGER, execute=False)
    execute = lambda: gw.approvals.aexecute(approval_id)  # noqa: E731
    asyncio.run(_cancel_in_admission(gw, gate, side, execute, result_lost=False))
    assert runs == [] and gw.approvals.get(approval_id).status == "failed"
    assert _lifecycle(gw)[-2:] == [STARTED, ("execution", None, "cancelled")]
    with pytest.raises(ApprovalRequired):  # not ToolDenied: the cancelled call holds no slot of the limit
        gw.call("lookup", {"id": "a2"}, principal="ann")
    assert gw.audit.verify().ok
    gw.close()


def test_an_aexecute_cancelled_once_it_claimed_the_approval_does_not_leave_it_executing(tmp_path: Path) -> None:
    gw, _, runs = _limited(tmp_path, "sqlite", None, APPROVED)
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("lookup", {"id": "a1"}, principal="ann")
    approval_id = pending.value.approval_id
    gw.approvals.approve(approval_id, by=MANAGER, execute=False)

    async def scenario() -> None:
        claims = concurrent.futures.ThreadPoolExecutor(1)
        asyncio.get_running_loop().set_default_executor(claims)
        task = asyncio.ensure_future(gw.approvals.aexecute(approval_id))
        await asyncio.sleep(0)  # one turn of the loop: the task hands its claim to the executor and waits
        claims.submit(int).result()  # the claim is made; the loop is held, so the task has not seen it
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert runs == [] and gw.approvals.get(approval_id).status == "failed"  # not "executing" forever
    with pytest.raises(ApprovalError, match="failed: cancelled before it ran"):
        gw.approvals.execute(approval_id)
    gw.close()


def test_an_acall_cancelled_while_it_waits_for_an_approval_leaves_it_pending(tmp_path: Path) -> None:
    gw, _, runs = _limited(tmp_path, "sqlite", None, APPROVED)

    async def scenario() -> None:
        with pytest.raises(TimeoutError):  # nobody decides: it is cancelled whenever the timeout falls
            await asyncio.wait_for(gw.acall("lookup", {"id": "a1"}, principal="ann", approval="wait"), 0.05)

    asyncio.run(scenario())
    (waiting,) = gw.approvals.list()
    assert _lifecycle(gw) == [("decision", "needs_approval", "pending")]
    assert gw.approvals.approve(waiting.id, by=MANAGER) == "a1" and runs == ["a1"]  # approved later, it runs once
    assert gw.audit.verify().ok
    gw.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_prerequisite_cancelled_during_admission_does_not_satisfy_after(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, side: concurrent.futures.Executor
) -> None:
    """The false allow of a leaked reservation: a verification that never ran must not unlock the export."""
    policy = """policy "p"
allow verify, export.
deny verify when account(id).frozen is true.
deny export unless after verify for the same user within 1 hour.
"""
    gw, gate, runs = _limited(tmp_path, backend, request, policy, name="verify")
    gw.tool(lambda: "exported", name="export", schema={"type": "object"})
    verify = lambda: gw.acall("verify", {"id": "a1"}, principal="ann")  # noqa: E731
    asyncio.run(_cancel_in_admission(gw, gate, side, verify, result_lost=False))
    assert runs == []
    with pytest.raises(ToolDenied):
        gw.call("export", principal="ann")
    assert gw.audit.verify().ok
    gw.close()


def test_an_anyio_cancel_scope_stopping_a_sync_tool_records_it_cancelled_once(tmp_path: Path) -> None:
    """The MCP server's way: a level-triggered cancel scope (every await in it is cancelled again). The sync tool
    runs on in its thread after the cancel; its late result adds no second outcome."""
    gw = _gateway(tmp_path, policy=LIMITED.replace("deny lookup when account(id).frozen is true.\n", ""))
    running, release, finished = threading.Event(), threading.Event(), threading.Event()

    @gw.tool(name="lookup", schema={"type": "object"})
    def lookup(id: str) -> str:
        running.set()
        release.wait()
        finished.set()
        return id

    async def scenario() -> None:
        outcome, hold = concurrent.futures.ThreadPoolExecutor(1), threading.Event()
        asyncio.get_running_loop().set_default_executor(outcome)  # asyncio.run waits for it
        async with anyio.create_task_group() as group:
            group.start_soon(functools.partial(gw.acall, "lookup", {"id": "a1"}, principal="ann"))
            await anyio.to_thread.run_sync(running.wait)
            outcome.submit(hold.wait)  # the outcome's record queues behind this; the scope cancels its await at once
            group.cancel_scope.cancel()
        hold.set()

    asyncio.run(scenario())
    release.set()
    finished.wait()  # the tool ran to its end in its thread; no one takes its result
    assert _lifecycle(gw) == [STARTED, ("execution", None, "cancelled")]
    with pytest.raises(ToolDenied):
        gw.call("lookup", {"id": "a2"}, principal="ann")  # it ran: it counts
    assert gw.audit.verify().ok
    gw.close()


def test_a_sync_call_whose_tool_times_out_returns_while_the_tool_still_runs(tmp_path: Path) -> None:
    """``timeout=`` under ``call``: it waited for the late tool to finish, then reported a timeout (and gave a
    stateful call's place back) for a call that had completed."""
    gw = _gateway(tmp_path, policy='policy "p"\nallow slow.\n')
    release, finished = threading.Event(), threading.Event()

    @gw.tool(name="slow", schema={"type": "object"}, timeout=0.05)
    def slow() -> str:
        release.wait(10)
        finished.set()
        return "done"

    with pytest.raises(ToolExecutionError, match="timed out"):
        gw.call("slow", principal="ann")
    assert not finished.is_set()  # the caller has its answer; the tool runs on in the gateway's tool threads
    release.set()
    assert [r["outcome"] for r in _records(gw)] == ["started", "timeout"]
    gw.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_call_that_timed_out_counts(kind: str, tmp_path: Path) -> None:
    """Its outcome is unknown (a sync tool runs on; an async one may have acted before it was stopped): given its
    place back, a caller who can slow the tool down would pass any cap."""
    gw = _gateway(tmp_path, policy='policy "p"\nallow slow.\nlimit slow to 1 calls per hour per user.\n')
    release = threading.Event()

    if kind == "sync":

        @gw.tool(name="slow", schema={"type": "object"}, timeout=0.05)
        def slow() -> str:
            release.wait(10)
            return "done"
    else:

        @gw.tool(name="slow", schema={"type": "object"}, timeout=0.05)
        async def slow() -> str:
            await asyncio.sleep(10)
            return "done"

    with pytest.raises(ToolExecutionError, match="timed out"):
        gw.call("slow", principal="ann")
    release.set()
    with pytest.raises(ToolDenied, match="limit reached"):
        gw.call("slow", principal="ann")
    gw.close()
