"""A thread outlives the ``await`` of a cancelled task: what it did for that task must still be settled.

``asyncio.to_thread`` cannot stop its thread when the awaiting task is cancelled (``task.cancel()``,
``asyncio.wait_for``, a failing ``TaskGroup`` sibling, an MCP client's cancel notification): the thread runs on,
commits what it commits, and its result is dropped. For admission that result is a call allowed, recorded as
``started`` and reserved in the state store, which no one would ever run or settle.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Handover(Generic[T]):
    """Between the thread and its awaiting task: whichever learns second that the task was cancelled settles."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.returned: tuple[T] | None = None  # what func returned, once it has
        self.cancelled = False


async def to_thread_settled(func: Callable[[], T], settle: Callable[[T], None]) -> T:
    """``await asyncio.to_thread(func)``; if the awaiting task is cancelled, ``settle(result)`` runs once ``func``
    has returned: in its thread when it returns after the cancel, in a thread of its own when its result came
    back just before the cancel and was lost with it. A cancel before a thread picked ``func`` up means it never
    runs, and nothing is settled. ``settle`` must not raise (it runs where no one catches)."""
    handover: _Handover[T] = _Handover()
    try:
        return await asyncio.to_thread(_hand_over, func, settle, handover)
    except asyncio.CancelledError:
        with handover.lock:
            handover.cancelled, returned = True, handover.returned
        if returned is not None:
            await in_thread(settle, *returned)
        raise


async def in_thread(func: Callable[..., T], *args: Any) -> T:
    """``asyncio.to_thread`` for work that must be done once asked for (an outcome, a settlement): a cancel of
    the awaiting task stops the wait, never the work. Unshielded, a cancel that comes before a thread has picked
    the work up drops it, and one does come at once inside an anyio cancel scope (the MCP server's), which
    cancels every await in it again. The loop's executor runs it; ``asyncio.run`` waits for that before it returns."""
    call = functools.partial(contextvars.copy_context().run, func, *args)  # as to_thread: the caller's context
    return await asyncio.shield(asyncio.get_running_loop().run_in_executor(None, call))


def _hand_over(func: Callable[[], T], settle: Callable[[T], None], handover: _Handover[T]) -> T:
    result = func()
    with handover.lock:
        handover.returned, cancelled = (result,), handover.cancelled
    if cancelled:
        settle(result)
    return result
