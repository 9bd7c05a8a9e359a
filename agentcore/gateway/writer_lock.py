"""A blocking lock, shared by every process writing one SQLite file, taken around each write transaction.

SQLite lets one writer in at a time and makes the others poll: its busy handler sleeps 1, 2, 5, 10, ... ms between
tries, so under contention from other processes a commit of tens of microseconds waits milliseconds. Writers
that first take this lock (``flock`` on a file beside the database) wait in the kernel instead and wake as soon as
it is free, so SQLite's own lock is almost always free when they reach it. It only orders writers; SQLite's
locking still decides correctness, so a writer that does not take it (the ``sqlite3`` shell, an older agentcore)
is merely slower. The kernel drops the lock of a process that dies. Where ``flock`` does not exist (Windows)
the lock does nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if sys.platform != "win32":
    import fcntl

# This process's id, updated in a forked child: os.getpid() is a system call, and every write asks (twice).
_process = [os.getpid()]
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _process.__setitem__(0, os.getpid()))


class WriterLock:
    """``acquire``/``release`` an exclusive lock on ``path`` (created empty if missing). Nested takes count (the
    lock is dropped by the outermost release), but it does not serialise threads: callers do that first. Reopened
    in a forked child, whose descriptor would share the parent's lock.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._fd = -1
        self._pid = 0
        self._depth = 0

    def acquire(self) -> None:
        self._take(blocking=True)

    def try_acquire(self) -> bool:
        """Take the lock only if no other process holds it (no wait); False when one does."""
        return self._take(blocking=False)

    def _take(self, *, blocking: bool) -> bool:
        if sys.platform == "win32":
            return True
        if self._pid != _process[0]:
            if self._fd >= 0:  # inherited: closing our copy leaves the parent's lock alone (LOCK_UN would not)
                os.close(self._fd)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._pid, self._depth = _process[0], 0
        if self._depth == 0:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)  # GIL released
            except BlockingIOError:
                return False
        self._depth += 1
        return True

    def release(self) -> None:
        if sys.platform != "win32" and self._pid == _process[0] and self._depth > 0:
            self._depth -= 1
            if self._depth == 0:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._pid == _process[0] and self._fd >= 0:
            os.close(self._fd)
        self._fd, self._pid, self._depth = -1, 0, 0
