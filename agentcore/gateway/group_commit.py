"""Group commit: concurrent callers' writes share one transaction, and each caller returns only once its own write
is committed (or raises why it is not).

Every commit pays fixed costs (the file locks, the WAL frame of the chain head, on ``durability="power"`` an
fsync) and releases and retakes the GIL; callers that arrive while a commit is in progress wait for the next one,
so N concurrent callers pay those costs about once instead of N times. There is no thread of its own: the first
caller to find no commit in progress leads, writes every queued item in one batch, wakes the callers whose items
it wrote and passes the lead to the first caller that queued meanwhile. A caller alone writes its item at once.

If a batch fails, each of its items is written again alone, so one item's failure is that item's alone: a caller
whose write fails gets the exception, and nobody is woken before their own item is committed.
"""

from __future__ import annotations

import _thread
import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from agentcore.errors import AgentCoreError

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
_UNSET: object = object()  # a slot's result before its batch committed


class WriteInterrupted(AgentCoreError):
    """The caller that was writing a batch was interrupted (KeyboardInterrupt, SystemExit) before it committed."""


class _Slot(Generic[T, R]):
    """One caller's item and what became of it; ``wake`` is held until the caller may look."""

    __slots__ = ("error", "item", "lead", "result", "wake")

    def __init__(self, item: T) -> None:
        self.item = item
        self.result: R | object = _UNSET
        self.error: BaseException | None = None
        self.lead = False  # woken to lead the next batch rather than with an outcome
        self.wake = _thread.allocate_lock()  # a bare lock: far cheaper than an Event, created on every write
        self.wake.acquire()

    def outcome(self) -> R:
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # the leader set it: no error, so not _UNSET


class GroupCommit(Generic[T, R]):
    """``submit(item)`` returns ``write([...])``'s result for ``item`` once the batch that held it committed.

    ``write`` receives the items of one batch in arrival order and returns one result per item, committing them
    all or raising; it runs in the leading caller's thread, never two at a time.
    """

    def __init__(self, write: Callable[[list[T]], list[R]], *, max_batch: int = 256) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        self._write = write
        self.max_batch = max_batch
        self._mutex = threading.Lock()  # guards the queue and the lead; never held while writing
        self._queue: list[_Slot[T, R]] = []
        self._leading = False
        self.batches = 0  # committed batches and the items in them: items / batches is the mean batch size
        self.items = 0

    def submit(self, item: T) -> R:
        slot: _Slot[T, R] = _Slot(item)
        with self._mutex:
            self._queue.append(slot)
            follow, self._leading = self._leading, True
        if follow:
            slot.wake.acquire()  # the GIL is released while waiting
            if not slot.lead:
                return slot.outcome()
        self._lead()
        return slot.outcome()

    def _lead(self) -> None:
        with self._mutex:  # the leader's own slot is always first in the queue here
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
        try:
            self._commit(batch)
        except BaseException:
            interrupted = WriteInterrupted("the write was interrupted before it committed; nothing was recorded")
            for slot in batch:
                if slot.result is _UNSET and slot.error is None:
                    slot.error = interrupted
            raise
        finally:
            with self._mutex:
                following = self._queue[0] if self._queue else None
                self._leading = following is not None
            for slot in batch[1:]:
                slot.wake.release()
            if following is not None:
                following.lead = True
                following.wake.release()

    def _commit(self, batch: list[_Slot[T, R]]) -> None:
        try:
            results = self._write([slot.item for slot in batch])
        except Exception as error:
            if len(batch) == 1:
                batch[0].error = error
                return
            log.warning("group commit: a batch of %d failed (%s); writing each alone", len(batch), error)
            for slot in batch:
                try:
                    slot.result = self._write([slot.item])[0]
                except Exception as alone:
                    slot.error = alone
            return
        for slot, result in zip(batch, results, strict=True):
            slot.result = result
        self.batches += 1
        self.items += len(batch)
