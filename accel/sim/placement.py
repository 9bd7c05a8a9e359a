"""Placing model replicas on NeuronCores by HBM, and the pools of cores each model dispatches to.

Every model is offered a replica on every core (work-conserving: an idle core can serve any model it
holds); replicas are packed round-robin, worst-fit (the core with the most free HBM first), so large
models spread out and small ones share. A model too large for any core is an error, not a silent skip.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agentcore.accel.errors import PlacementError
from agentcore.accel.sim.profiles import DeviceProfile

log = logging.getLogger(__name__)
GIB = 2**30


class Demand(BaseModel):
    """HBM one replica of a model needs: weights plus peak activations at its largest batch."""

    model_config = ConfigDict(frozen=True)

    model: str
    bytes: float
    detail: str = ""


def place(demands: Sequence[Demand], profile: DeviceProfile) -> dict[str, list[int]]:
    """Core ids holding a replica of each model."""
    capacity = profile.core_hbm_bytes
    for demand in demands:
        if demand.bytes > capacity:
            raise PlacementError(
                f"model {demand.model} needs {demand.bytes / GIB:.2f} GiB per replica ({demand.detail}) but one "
                f"NeuronCore of {profile.name} has {capacity / GIB:.2f} GiB of HBM; lower max_batch or precision, "
                "or choose a chip with more HBM per core"
            )
    free = [(-capacity, core) for core in range(profile.cores)]
    heapq.heapify(free)
    placed: dict[str, list[int]] = {demand.model: [] for demand in demands}
    holding: dict[str, set[int]] = {demand.model: set() for demand in demands}
    ordered = sorted(demands, key=lambda demand: -demand.bytes)
    for _ in range(profile.cores):
        progress = False
        for demand in ordered:
            held = holding[demand.model]
            skipped = []
            while free and -free[0][0] >= demand.bytes and free[0][1] in held:
                skipped.append(heapq.heappop(free))  # already holds this model: try the next-emptiest core
            if free and -free[0][0] >= demand.bytes:
                room, core = heapq.heappop(free)
                placed[demand.model].append(core)
                held.add(core)
                heapq.heappush(free, (room + demand.bytes, core))
                progress = True
            for entry in skipped:
                heapq.heappush(free, entry)
        if not progress:
            break
    for demand in ordered:
        if not placed[demand.model]:
            raise PlacementError(f"model {demand.model} fits on no core of {profile.name}: HBM is full of other models")
        log.info("placed %d replicas of %s on %s", len(placed[demand.model]), demand.model, profile.name)
    return placed


class ReplicaPool:
    """A model's cores ordered by when they are next free; ``core_free`` is shared by every pool of a device."""

    def __init__(self, cores: Sequence[int], core_free: list[float]) -> None:
        self.core_free = core_free
        self._heap = [(core_free[core], core) for core in cores]
        heapq.heapify(self._heap)

    def earliest(self) -> tuple[float, int]:
        """(free time, core) of the core that frees first, refreshing entries other models made stale."""
        heap, core_free = self._heap, self.core_free
        while heap[0][0] != core_free[heap[0][1]]:
            heapq.heapreplace(heap, (core_free[heap[0][1]], heap[0][1]))
        return heap[0]

    def occupy(self, core: int, until: float) -> None:
        """Mark the core returned by :meth:`earliest` busy until ``until``."""
        self.core_free[core] = until
        heapq.heapreplace(self._heap, (until, core))
