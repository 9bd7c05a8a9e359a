"""A thread outlives the ``await`` of a cancelled task: what it did for that task must still be settled.

``asyncio.to_thread`` cannot stop its thread when the awaiting task is cancelled (``task.cancel()``,
``asyncio.wait_for``, a failing ``TaskGroup`` sibling, an MCP client's cancel notification): the thread runs on,
commits what it commits, and its result is dropped. For admission that result is a call allowed, recorded as
``started`` and reserved in the state store, which no one would ever run or settle.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

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
    back just before the cancel and was lost with it. ``settle`` must not raise (it runs where no one catches)."""
    handover: _Handover[T] = _Handover()
    try:
        return await asyncio.to_thread(_hand_over, func, settle, handover)
    except asyncio.CancelledError:
        with handover.lock:
            handover.cancelled, returned = True, handover.returned
        if returned is not None:  # started in the thread at once: a second cancel of this await cannot stop it
            await asyncio.to_thread(settle, *returned)
        raise


def _hand_over(func: Callable[[], T], settle: Callable[[T], None], handover: _Handover[T]) -> T:
    result = func()
    with handover.lock:
        handover.returned, cancelled = (result,), handover.cancelled
    if cancelled:
        settle(result)
    return result
