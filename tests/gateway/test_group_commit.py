"""Group commit: concurrent callers share a commit, and nobody returns before their own write is committed."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore.gateway import Gateway, ToolDenied
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.db import Database
from agentcore.gateway.group_commit import GroupCommit, WriteInterrupted

POLICY = 'policy "p"\nallow t.hit.\n'


def _together(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` in ``count`` threads released together; each result, or the exception it raised."""
    start = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


class _Held:
    """A batch writer whose first batch waits until released, so that every other caller queues behind it."""

    def __init__(self, fail: Callable[[list[int]], bool] = lambda batch: False) -> None:
        self.batches: list[list[int]] = []
        self.committed: list[int] = []
        self.first = threading.Event()
        self.fail = fail

    def __call__(self, batch: list[int]) -> list[int]:
        if not self.batches:
            self.batches.append(batch)
            self.first.wait(timeout=30)
        else:
            self.batches.append(batch)
        if self.fail(batch):
            raise OSError("database or disk is full")
        self.committed.extend(batch)
        return [item * 10 for item in batch]


def test_callers_that_arrive_during_a_commit_share_the_next_one() -> None:
    writer = _Held()
    group: GroupCommit[int, int] = GroupCommit(writer)
    first = threading.Thread(target=group.submit, args=(0,))
    first.start()
    while not writer.batches:
        time.sleep(0.001)
    others = threading.Thread(target=lambda: _together(7, lambda i: group.submit(i + 1)))
    others.start()
    while len(group._queue) < 7:  # every other caller has queued behind the held commit
        time.sleep(0.001)
    writer.first.set()
    first.join(timeout=30)
    others.join(timeout=30)
    assert writer.batches[0] == [0] and sorted(writer.batches[1]) == [1, 2, 3, 4, 5, 6, 7]
    assert (group.batches, group.items) == (2, 8)


def test_each_caller_gets_its_own_result_only_after_its_batch_committed() -> None:
    writer = _Held()
    group: GroupCommit[int, int] = GroupCommit(writer)
    writer.first.set()

    def submit(i: int) -> tuple[int, bool]:
        result = group.submit(i)
        return result, i in writer.committed  # committed before the caller was woken

    assert _together(16, submit) == [(i * 10, True) for i in range(16)]


def test_a_failed_batch_raises_for_every_caller_whose_write_fails_alone_too() -> None:
    writer = _Held(fail=lambda batch: True)  # the disk stays full
    group: GroupCommit[int, int] = GroupCommit(writer)
    writer.first.set()
    results = _together(8, group.submit)
    assert all(isinstance(r, OSError) for r in results) and writer.committed == []


def test_one_bad_item_fails_only_its_own_caller() -> None:
    writer = _Held(fail=lambda batch: 3 in batch)
    group: GroupCommit[int, int] = GroupCommit(writer)
    first = threading.Thread(target=group.submit, args=(0,))
    first.start()
    while not writer.batches:
        time.sleep(0.001)
    others = threading.Thread(target=lambda: results.extend(_together(7, lambda i: group.submit(i + 1))))
    results: list[Any] = []
    others.start()
    while len(group._queue) < 7:
        time.sleep(0.001)
    writer.first.set()
    first.join(timeout=30)
    others.join(timeout=30)
    assert isinstance(results[2], OSError)
    assert [r for i, r in enumerate(results) if i != 2] == [10, 20, 40, 50, 60, 70]


def test_an_interrupted_leader_leaves_no_caller_of_its_batch_believing_it_was_written() -> None:
    writer = _Held(fail=lambda batch: False)
    second = writer.__call__

    def interrupted(batch: list[int]) -> list[int]:
        if len(writer.batches) == 1:  # the second batch: its leader is interrupted while writing
            writer.batches.append(batch)
            raise KeyboardInterrupt
        return second(batch)

    group: GroupCommit[int, int] = GroupCommit(interrupted)
    outcomes: dict[int, BaseException | int] = {}

    def submit(i: int) -> None:
        try:
            outcomes[i] = group.submit(i)
        except BaseException as exc:
            outcomes[i] = exc

    first = threading.Thread(target=submit, args=(0,))
    first.start()
    while not writer.batches:
        time.sleep(0.001)
    others = [threading.Thread(target=submit, args=(i,)) for i in range(1, 5)]
    for thread in others:
        thread.start()
    while len(group._queue) < 4:
        time.sleep(0.001)
    writer.first.set()
    for thread in [first, *others]:
        thread.join(timeout=30)
    assert outcomes[0] == 0 and writer.committed == [0]
    leader = next(i for i in range(1, 5) if isinstance(outcomes[i], KeyboardInterrupt))
    assert all(isinstance(outcomes[i], WriteInterrupted) for i in range(1, 5) if i != leader)
    assert group.submit(9) == 90  # the lead was given back: the next caller writes at once


def test_a_lone_caller_writes_at_once_without_a_wake_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The uncontended case (every call of a single-threaded gateway, twice) allocates nothing to wait on."""
    import agentcore.gateway.group_commit as module

    allocated: list[object] = []
    real = module._thread.allocate_lock
    monkeypatch.setattr(module._thread, "allocate_lock", lambda: allocated.append(1) or real())
    writer = _Recorder()
    group: GroupCommit[int, int] = GroupCommit(writer)
    assert [group.submit(n) for n in range(3)] == [0, 1, 2]
    assert allocated == [] and writer.batches == [[0], [1], [2]] and (group.batches, group.items) == (3, 3)


def test_a_lone_caller_whose_write_fails_or_is_interrupted_gives_the_lead_back() -> None:
    writer = _Recorder()
    writer.refuse = {1}
    group: GroupCommit[int, int] = GroupCommit(writer)
    with pytest.raises(OSError, match="full"):
        group.submit(1)

    def interrupted(batch: list[int]) -> list[int]:
        raise KeyboardInterrupt

    stopped: GroupCommit[int, int] = GroupCommit(interrupted)
    with pytest.raises(KeyboardInterrupt):
        stopped.submit(1)
    assert not group._leading and not stopped._leading  # the next caller leads: nobody waits forever
    assert group.submit(2) == 2 and (group.batches, group.items) == (1, 1)
    stopped.flush()  # nothing is left queued or in flight


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        GroupCommit(lambda batch: batch, max_batch=0)


# ---- deferred items -------------------------------------------------------------------------------------------
class _Recorder:
    """A batch writer that records its batches and can be told to refuse items."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.refuse: set[int] = set()

    def __call__(self, batch: list[int]) -> list[int]:
        if self.refuse & set(batch):
            raise OSError("database or disk is full")
        self.batches.append(list(batch))
        return batch


def test_a_deferred_item_rides_in_the_next_callers_batch() -> None:
    writer = _Recorder()
    group: GroupCommit[int, int] = GroupCommit(writer, defer_s=60)  # the flusher would wait a minute
    done: list[BaseException | None] = []
    group.defer(1, done.append)
    assert writer.batches == [] and done == []  # queued, not written: nobody waits for it
    assert group.submit(2) == 2
    assert writer.batches == [[1, 2]] and done == [None]  # one batch, one commit, for both
    group.close()


def test_the_flusher_writes_a_deferred_item_that_no_batch_took() -> None:
    writer = _Recorder()
    group: GroupCommit[int, int] = GroupCommit(writer, defer_s=0.001)
    landed = threading.Event()
    group.defer(7, lambda error: landed.set())
    assert landed.wait(timeout=30)
    assert writer.batches == [[7]]
    group.close()


def test_flush_and_close_write_every_deferred_item_and_close_refuses_more() -> None:
    writer = _Recorder()
    group: GroupCommit[int, int] = GroupCommit(writer, defer_s=60)
    done: list[BaseException | None] = []
    for n in range(3):
        group.defer(n, done.append)
    group.flush()
    assert writer.batches == [[0, 1, 2]] and done == [None, None, None]
    group.defer(3, done.append)
    group.close()
    assert writer.batches[-1] == [3] and len(done) == 4
    with pytest.raises(RuntimeError, match="closed"):
        group.defer(4, done.append)


def test_a_deferred_item_that_fails_is_reported_to_its_callback_alone() -> None:
    writer = _Recorder()
    writer.refuse = {1}
    group: GroupCommit[int, int] = GroupCommit(writer, defer_s=60)
    outcomes: dict[int, BaseException | None] = {}
    group.defer(1, lambda error: outcomes.setdefault(1, error))
    group.defer(2, lambda error: outcomes.setdefault(2, error))
    assert group.submit(3) == 3  # the batch fails, each item is written alone: only 1 fails
    assert isinstance(outcomes[1], OSError) and outcomes[2] is None
    assert writer.batches == [[2], [3]]
    group.close()


def test_a_caller_behind_more_deferred_items_than_a_batch_holds_is_written_too() -> None:
    writer = _Recorder()
    group: GroupCommit[int, int] = GroupCommit(writer, max_batch=4, defer_s=60)
    for n in range(10):
        group.defer(n, lambda error: None)
    assert group.submit(10) == 10
    assert writer.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    group.close()


def test_a_failing_callback_does_not_stop_the_writer() -> None:
    writer = _Recorder()
    group: GroupCommit[int, int] = GroupCommit(writer, defer_s=60)

    def broken(error: BaseException | None) -> None:
        raise ValueError("a bug in the callback")

    group.defer(1, broken)
    assert group.submit(2) == 2 and writer.batches == [[1, 2]]
    group.close()


# ---- through the gateway -------------------------------------------------------------------------------------
def _gateway(tmp_path: Path, hold_s: float = 0.005) -> Gateway:
    (tmp_path / "p.policy").write_text(POLICY)
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"))
    write = gw.audit._group._write

    def slow(batch: list[dict[str, Any]]) -> list[int]:  # each commit takes a while: callers pile up behind it
        time.sleep(hold_s)
        return write(batch)

    gw.audit._group._write = slow
    return gw


def _started(log: AuditLog) -> dict[Any, str]:
    """Argument ``n`` -> effect of every committed ``started`` decision, read as anyone else would."""
    found = {}
    for row in log.rows():
        if row["kind"] == "decision" and row["outcome"] == "started":
            found[json.loads(row["detail"])["args"]["n"]] = row["effect"]
    return found


def test_every_started_record_is_committed_before_its_tool_runs(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    reader = AuditLog(Database(str(tmp_path / "gw.db")))  # its own connection: sees only what was committed
    seen: dict[int, str | None] = {}

    @gw.tool(name="t.hit")
    def hit(n: int) -> int:
        seen[n] = _started(reader).get(n)
        return n

    results = _together(8, lambda i: [gw.call("t.hit", {"n": i * 100 + k}, principal=f"u{i}") for k in range(5)])
    assert results == [[i * 100 + k for k in range(5)] for i in range(8)]
    assert len(seen) == 40 and set(seen.values()) == {"allow"}
    group = gw.audit._group
    assert group.items > group.batches  # the records really were batched
    assert gw.audit.verify().ok and gw.audit.verify().records == 80
    reader.db.close()
    gw.close()


def test_a_failed_batch_commit_denies_every_call_in_it(tmp_path: Path) -> None:
    gw = _gateway(tmp_path)
    ran: list[int] = []
    gw.tool(lambda n: ran.append(n) or n, name="t.hit", schema={"type": "object"})
    with gw.db.write("test") as cur:  # every started record is refused, as a full disk would
        cur.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT ON gateway_audit WHEN NEW.outcome = 'started' "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
    results = _together(8, lambda i: gw.call("t.hit", {"n": i}, principal=f"u{i}"))
    assert all(isinstance(r, ToolDenied) for r in results), results
    assert ran == []
    gw.close()


CALLERS = textwrap.dedent(
    """
    import os, sys, threading
    from agentcore import Gateway
    gw = Gateway(sys.argv[1], database=sys.argv[2], outcome_delay_s=0)  # outcomes committed before returning
    ran = os.open(sys.argv[3], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    gw.tool(lambda n: os.write(ran, f"{n}\\n".encode()) and n, name="t.hit", schema={"type": "object"})
    count, lock = 0, threading.Lock()

    def caller(t):
        global count
        for k in range(100000):
            gw.call("t.hit", {"n": t * 100000 + k}, principal="u" + str(t))
            with lock:
                print(t * 100000 + k, flush=True)  # acknowledged: its outcome was committed before
                count += 1

    for t in range(8):
        threading.Thread(target=caller, args=(t,), daemon=True).start()
    threading.Event().wait()
    """
)


def test_a_kill_9_during_batched_commits_loses_no_acknowledged_call(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess

    (tmp_path / "p.policy").write_text(POLICY)
    database, ran_file = str(tmp_path / "crash.db"), tmp_path / "ran.txt"
    argv = [sys.executable, "-c", CALLERS, str(tmp_path / "p.policy"), database, str(ran_file)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged = []
    for line in proc.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) >= 200:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    log = AuditLog(Database(database))
    assert log.verify().ok
    started = _started(log)
    finished = set()
    for row in log.rows():
        if row["kind"] == "execution" and row["outcome"] == "ok":
            finished.add(row["call_id"])
    executed = [int(n) for n in ran_file.read_text().split()]
    assert set(executed) <= set(started)  # no tool ran before its decision was committed
    by_call = {}
    for row in log.rows():
        if row["kind"] == "decision":
            by_call[json.loads(row["detail"])["args"]["n"]] = row["call_id"]
    assert all(by_call[n] in finished for n in acknowledged)  # every acknowledged call has its outcome
    log.db.close()


def test_holding_the_lead_writes_at_once_and_other_callers_wait_for_it() -> None:
    """``holding`` takes the lead only when it is free; the holder's submits write at once, another thread's wait
    until it lets go, and nobody can hold it while someone else leads."""
    written: list[list[str]] = []
    group: GroupCommit[str, str] = GroupCommit(lambda items: (written.append(items), items)[1])
    others: list[str] = []
    with group.holding() as held:
        assert held
        assert group.submit("mine") == "mine"
        other = threading.Thread(target=lambda: others.append(group.submit("theirs")))
        other.start()
        other.join(0.2)
        assert other.is_alive() and others == []  # queued behind the holder
        done = threading.Event()
        with_lead: list[bool] = []

        def try_hold() -> None:
            with group.holding() as second:
                with_lead.append(second)
            done.set()

        threading.Thread(target=try_hold).start()
        assert done.wait(5) and with_lead == [False]
    other.join(5)
    assert others == ["theirs"] and written == [["mine"], ["theirs"]]
    assert (group.batches, group.items) == (2, 2)
