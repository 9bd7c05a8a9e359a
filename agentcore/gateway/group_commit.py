"""Group commit: concurrent callers' writes share one transaction, and each caller returns only once its own write
is committed (or raises why it is not).

Every commit pays fixed costs (the file locks, the WAL frame of the chain head, on ``durability="power"`` an
fsync) and releases and retakes the GIL; callers that arrive while a commit is in progress wait for the next one,
so N concurrent callers pay those costs about once instead of N times. There is no thread of its own: the first
caller to find no commit in progress leads, writes every queued item in one batch, wakes the callers whose items
it wrote and passes the lead to the first caller that queued meanwhile. A caller alone writes its item at once.

An item can also be ``defer``-red: nobody waits for it, it rides in the next batch that a caller writes, and a
flusher thread writes it itself if no batch has taken it within ``defer_s``, and so does the interpreter's exit.
Its ``done`` callback learns whether it was committed. This is what lets a call's outcome share the commit of the
next call's decision.

If a batch fails, each of its items is written again alone, so one item's failure is that item's alone: a caller
whose write fails gets the exception, a deferred item's ``done`` gets it, and nobody is woken before their own
item is committed.
"""

from __future__ import annotations

import _thread
import atexit
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from agentcore.errors import AgentCoreError

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
_UNSET: object = object()  # a slot's result before its batch committed
Done = Callable[[BaseException | None], None]  # a deferred item's callback: None once committed, else why not


class WriteInterrupted(AgentCoreError):
    """The caller that was writing a batch was interrupted (KeyboardInterrupt, SystemExit) before it committed."""


class _Slot(Generic[T, R]):
    """One item and what became of it. A waiting caller's ``wake`` is held until the caller may look; a deferred
    item has no ``wake`` but a ``done`` callback and the time it was queued."""

    __slots__ = ("at", "done", "error", "item", "lead", "result", "wake")

    def __init__(self, item: T, done: Done | None = None) -> None:
        self.item = item
        self.result: R | object = _UNSET
        self.error: BaseException | None = None
        self.lead = False  # woken to lead the next batch rather than with an outcome
        self.done = done
        self.at = 0.0
        self.wake: _thread.LockType | None = None
        if done is None:
            self.wake = _thread.allocate_lock()  # a bare lock: far cheaper than an Event, created on every write
            self.wake.acquire()

    def outcome(self) -> R:
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # the leader set it: no error, so not _UNSET

    def finished(self) -> None:
        """Tell whoever cares that the batch holding this item is over."""
        if self.wake is not None:
            self.wake.release()
            return
        try:
            self.done(self.error)  # type: ignore[misc]  # a deferred slot always has one
        except Exception:  # the leader writes other callers' items: a callback's bug must not stop it
            log.exception("group commit: the callback of a deferred write failed")


class GroupCommit(Generic[T, R]):
    """``submit(item)`` returns ``write([...])``'s result for ``item`` once the batch that held it committed;
    ``defer(item, done)`` returns at once and calls ``done`` when a batch holding it, within about ``defer_s``, is
    over.

    ``write`` receives the items of one batch in arrival order and returns one result per item, committing them
    all or raising; it runs in the leading caller's (or the flusher's) thread, never two at a time.
    """

    def __init__(self, write: Callable[[list[T]], list[R]], *, max_batch: int = 256, defer_s: float = 0.005) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        self._write = write
        self.max_batch = max_batch
        self.defer_s = defer_s
        self._mutex = threading.Lock()  # guards the queue, the lead and the flusher's state; never held while writing
        self._queue: list[_Slot[T, R]] = []
        self._leading = False
        self._flusher: threading.Thread | None = None
        self._flusher_idle = threading.Condition(self._mutex)  # notified when a deferred item finds it idle
        self._idle = False
        self._closed = False
        self._queued = 0  # items ever queued, and items whose batch is over: the first _finished of them are done
        self._finished_count = 0
        self.batches = 0  # committed batches and the items in them: items / batches is the mean batch size
        self.items = 0
        self._holder: int | None = None  # the thread holding the lead through ``holding``

    @contextmanager
    def holding(self) -> Iterator[bool]:
        """Take the lead without waiting, if nobody has it and nothing is queued (True; else False, and nothing is
        held): meanwhile this thread's ``submit`` writes at once and other callers queue behind it."""
        me = threading.get_ident()
        with self._mutex:
            free = not self._leading and not self._queue and self._holder is None
            if free:
                self._leading, self._holder = True, me
        if not free:
            yield False
            return
        try:
            yield True
        finally:
            with self._mutex:
                self._holder = None
                self._pass_lead()

    def submit(self, item: T) -> R:
        held = self._holder == threading.get_ident()  # in ``holding``: it has the lead already, and keeps it
        with self._mutex:
            alone = held or (not self._leading and not self._queue)
            if alone:  # nothing in progress, nothing queued: write it at once, without a slot
                self._leading = True
                self._queued += 1
        if alone:
            return self._write_alone(item, keep_lead=held)
        slot: _Slot[T, R] = _Slot(item)
        with self._mutex:
            self._queue.append(slot)
            self._queued += 1
            follow, self._leading = self._leading, True
        if follow:
            slot.wake.acquire()  # type: ignore[union-attr]  # the GIL is released while waiting
            if not slot.lead:
                return slot.outcome()
        self._lead(slot)
        return slot.outcome()

    def _write_alone(self, item: T, *, keep_lead: bool) -> R:
        """The uncontended case of ``_lead``: the caller holds the lead with an empty queue, so its batch is its
        own item; it writes it (its error is its own, as a batch of one's is), then passes the lead on unless it
        keeps it (``holding``)."""
        try:
            result = self._write([item])[0]
            self.batches += 1
            self.items += 1
            return result
        finally:
            with self._mutex:
                self._finished_count += 1
                if not keep_lead:
                    self._pass_lead()

    def defer(self, item: T, done: Done) -> None:
        """Queue ``item`` for the next batch without waiting for it; ``done`` is called once that batch is over."""
        slot: _Slot[T, R] = _Slot(item, done)
        slot.at = time.monotonic()
        with self._mutex:
            if self._closed:
                raise RuntimeError("this group commit is closed")
            self._queue.append(slot)
            self._queued += 1
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_loop, name="agentcore-group-commit", daemon=True)
                self._flusher.start()
                atexit.register(self.flush)  # a script that ends without close() still writes its deferred items
            elif self._idle:
                self._idle = False
                self._flusher_idle.notify()

    def flush(self) -> None:
        """Write every item queued so far now, and wait for batches in flight: when this returns, each deferred
        item's ``done`` has been called."""
        with self._mutex:
            target = self._queued
        while True:
            with self._mutex:
                if self._finished_count >= target:  # batches are taken and finished in queue order
                    return
                lead = not self._leading
                self._leading = True
            if lead:
                self._lead(None)
            else:  # a caller is writing: its batch, or the flusher's, takes them; look again shortly
                time.sleep(0.0002)

    def close(self) -> None:
        """Refuse further ``defer``-red items, flush the queued ones, then stop the flusher."""
        with self._mutex:
            self._closed = True
        self.flush()
        with self._mutex:
            self._flusher_idle.notify()
            flusher = self._flusher
        if flusher is not None:
            flusher.join(timeout=5)
            atexit.unregister(self.flush)

    def _flush_loop(self) -> None:
        """Write deferred items that no caller's batch took within ``defer_s`` of being queued."""
        with self._mutex:
            while not self._closed:
                oldest = next((slot.at for slot in self._queue if slot.wake is None), None)
                if oldest is None:
                    self._idle = True
                    self._flusher_idle.wait()
                    self._idle = False
                    continue
                left = oldest + self.defer_s - time.monotonic()
                if left > 0 or self._leading:  # not due yet, or a caller is writing and will take it
                    self._flusher_idle.wait(max(left, self.defer_s / 4))
                    continue
                self._leading = True
                self._mutex.release()
                try:
                    self._lead(None)
                except BaseException:
                    log.exception("group commit: the flusher stopped")
                    raise
                finally:
                    self._mutex.acquire()

    def _lead(self, own: _Slot[T, R] | None) -> None:
        """Write batches until ``own`` is written (the flusher, ``own=None``: until only waiting callers' items are
        queued, or nothing), then pass the lead to the first caller still waiting, if any."""
        while True:
            with self._mutex:
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
            try:
                self._commit(batch)
            except BaseException:
                error = WriteInterrupted("the write was interrupted before it committed; nothing was recorded")
                for slot in batch:
                    if slot.result is _UNSET and slot.error is None:
                        slot.error = error
                with self._mutex:
                    if own is not None and own in self._queue:
                        self._queue.remove(own)
                        self._finished_count += 1
                self._finished(batch, own)
                self._after_batch(batch, own, written=True, interrupted=True)
                raise
            self._finished(batch, own)
            if self._after_batch(batch, own, written=own is None or own in batch, interrupted=False):
                return

    @staticmethod
    def _finished(batch: list[_Slot[T, R]], own: _Slot[T, R] | None) -> None:
        for slot in batch:
            if slot is not own:
                slot.finished()

    def _after_batch(
        self, batch: list[_Slot[T, R]], own: _Slot[T, R] | None, *, written: bool, interrupted: bool
    ) -> bool:
        """Keep leading (False), or stop (True) with the lead passed to the first waiting caller or given up."""
        with self._mutex:
            self._finished_count += len(batch)
            if not interrupted and not written:
                return False  # the leader's own item is still queued
            if not interrupted and own is None and self._queue and not self._waiting():
                return False  # the flusher writes the deferred items that arrived meanwhile
            self._pass_lead()
            return True

    def _waiting(self) -> _Slot[T, R] | None:
        """The first queued item whose caller waits for it (not a deferred one); under ``_mutex``."""
        return next((slot for slot in self._queue if slot.wake is not None), None)

    def _pass_lead(self) -> None:
        """Under ``_mutex``, once the leader is done: wake the first waiting caller to lead the next batch, or give
        the lead up (deferred items left queued: the next caller's batch or the flusher takes them)."""
        following = self._waiting()
        if following is None:
            self._leading = False
            return
        following.lead = True
        following.wake.release()  # type: ignore[union-attr]

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
