"""The writer lock queues every process's writers of one SQLite file in the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agentcore.gateway import Gateway
from agentcore.gateway.db import Database
from agentcore.gateway.writer_lock import WriterLock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock does not exist on Windows")

HOLDER = textwrap.dedent(
    """
    import sys
    from agentcore.gateway.writer_lock import WriterLock
    lock = WriterLock(sys.argv[1])
    lock.acquire()
    print("held", flush=True)
    sys.stdin.readline()
    lock.release()
    print("released", flush=True)
    sys.stdin.readline()
    """
)


def test_a_write_waits_for_the_lock_another_process_holds_then_commits(tmp_path: Path) -> None:
    (tmp_path / "p.policy").write_text('policy "p"\nallow t.hit.\n')
    gw = Gateway(tmp_path / "p.policy", database=str(tmp_path / "gw.db"))
    gw.tool(lambda n: n, name="t.hit", schema={"type": "object"})
    assert gw.db.writers is not None and Path(gw.db.writers.path) == tmp_path / "gw.db-writer.lock"
    argv = [sys.executable, "-c", HOLDER, gw.db.writers.path]
    holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    results: list[int] = []
    caller = threading.Thread(target=lambda: results.append(gw.call("t.hit", {"n": 7}, principal="ann")))
    caller.start()
    caller.join(timeout=1.0)
    assert caller.is_alive() and results == []  # waiting for the lock: nothing committed, nothing ran
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "released"
    caller.join(timeout=30)
    assert results == [7] and gw.audit.verify().records == 2
    holder.communicate("\n", timeout=30)
    gw.close()


def test_a_forked_child_takes_the_lock_on_its_own_descriptor(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path / "x.lock")
    lock.acquire()  # opened in the parent, then inherited
    marker = tmp_path / "child-has-it"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            lock.acquire()  # an inherited descriptor would share the parent's lock and return at once
            marker.write_text("yes")
            lock.release()
        finally:
            os._exit(0)
    try:
        waited = threading.Event()
        waited.wait(0.5)
        assert not marker.exists()  # the child waits for the parent's lock
    finally:
        lock.release()
    os.waitpid(pid, 0)
    assert marker.read_text() == "yes"
    lock.close()


def test_taking_and_releasing_the_lock_asks_no_process_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every audit commit takes and releases it: a getpid() system call each time was measurable, so the id comes
    from a fork hook instead (the forked child above still reopens the lock)."""
    lock = WriterLock(tmp_path / "x.lock")

    def no_syscall() -> int:
        raise AssertionError("os.getpid() called")

    monkeypatch.setattr(os, "getpid", no_syscall)
    for _ in range(3):
        lock.acquire()
        lock.release()
    lock.close()


def test_in_memory_databases_have_no_writer_lock() -> None:
    db = Database("sqlite:///:memory:")
    assert db.writers is None
    db.close()


def test_try_acquire_does_not_wait_for_another_process_and_nested_takes_count(tmp_path: Path) -> None:
    """What lets a call's audit write run on the event loop: it takes the lock only if nobody holds it, and the
    commit inside, which takes it again, must not drop it early."""
    path = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdin is not None and holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    lock = WriterLock(path)
    assert not lock.try_acquire()  # another process has it: no wait
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "released"
    assert lock.try_acquire()
    lock.acquire()  # nested: returns at once
    lock.release()
    other = WriterLock(path)
    assert not other.try_acquire()  # the outer take still holds it
    lock.release()
    assert other.try_acquire()
    other.release()
    holder.communicate("\n", timeout=30)
    lock.close()
    other.close()
