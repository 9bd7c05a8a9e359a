"""The simulated fleet behind real ``Accelerator`` calls: each batch charged to a NeuronCore in real time.

Real calls use the same parts as simulate-only mode (HBM placement, replica pools ordered by free time,
cached service tables, bounded queues) on a clock that follows the process's monotonic clock, so
concurrent calls queue behind each other as they would on the device. A batch waits for the first free
core holding its model; a call's batches run in parallel on different cores, as with Neuron DataParallel.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from agentcore.accel.sim.config import load_config
from agentcore.accel.sim.models import SimModel
from agentcore.accel.sim.placement import Demand, ReplicaPool, place
from agentcore.accel.sim.profiles import DeviceProfile, ProfileCatalog
from agentcore.accel.sim.service import ServiceCache
from agentcore.accel.sim.timing import CostParameters

DEFAULT_MAX_QUEUE = 4096  # batches waiting per model before calls are rejected


class DeviceShare(NamedTuple):
    device: str
    seconds: float
    usd: float
    joules: float


class Charge(BaseModel):
    """What one call cost on the simulated fleet (all simulated)."""

    model_config = ConfigDict(frozen=True)

    queue_seconds: float = 0.0
    device_seconds: float = 0.0
    latency_seconds: float = 0.0
    usd: float = 0.0
    joules: float = 0.0
    devices: tuple[str, ...] = ()
    shares: tuple[DeviceShare, ...] = ()
    rejected: bool = False


class _Placed:
    def __init__(self, pool: ReplicaPool) -> None:
        self.pool = pool
        self.starts: list[float] = []  # heap of start times of batches still waiting


class SimulatedDevice:
    """Charges batches of real calls to one simulated profile (default: ``[accel] profile``); thread-safe."""

    def __init__(
        self,
        profile: str | DeviceProfile | None = None,
        *,
        catalog: ProfileCatalog | None = None,
        params: CostParameters | None = None,
        max_batch: int = 32,
        max_queue: int = DEFAULT_MAX_QUEUE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(profile, DeviceProfile):
            self.profile = profile
        else:
            config = load_config()
            self.profile = (catalog or config.catalog()).profile(profile or config.profile)
        self.service = ServiceCache(self.profile, params)
        self.max_batch = max_batch
        self.max_queue = max_queue
        self._clock = clock
        self._core_free = [0.0] * self.profile.cores
        self._placed: dict[tuple[str, str], _Placed] = {}
        self._lock = threading.Lock()

    def device_id(self, core: int) -> str:
        per_chip = self.profile.chip.cores
        return f"{self.profile.name}/chip{core // per_chip}/core{core % per_chip}"

    def _placement(self, model: SimModel, seq: int, precision: str) -> _Placed:
        key = (model.name, precision)
        placed = self._placed.get(key)
        if placed is None:
            table = self.service.table(model, seq, precision, self.max_batch)
            need = float(table.memory_bytes[self.max_batch])
            demand = Demand(model=model.name, bytes=need, detail=f"at batch {self.max_batch}, {precision}")
            cores = place([demand], self.profile)[model.name]
            placed = self._placed[key] = _Placed(ReplicaPool(cores, self._core_free))
        return placed

    def batch_seconds(self, model: SimModel, size: int, seq: int, precision: str) -> float:
        """One core's service time for a batch of ``size`` sequences of ``seq`` tokens (no queueing)."""
        return float(self.service.table(model, seq, precision, max(size, self.max_batch)).seconds[size])

    def spend(self, seconds: float) -> tuple[float, float]:
        """Simulated (dollars, joules) of ``seconds`` of one core's time."""
        profile = self.profile
        return seconds * profile.usd_per_core_second, seconds * (profile.core_active_watts + profile.core_idle_watts)

    def charge(self, model: SimModel, batches: Sequence[tuple[int, int]], precision: str) -> Charge:
        """Charge a call made of ``(batch size, sequence length)`` batches, arriving now."""
        with self._lock:
            now = self._clock()
            placed = self._placement(model, max(seq for _, seq in batches), precision)
            while placed.starts and placed.starts[0] <= now:
                heapq.heappop(placed.starts)
            if len(placed.starts) + len(batches) > self.max_queue:
                return Charge(rejected=True)
            shares, queue, finish = [], 0.0, now
            for size, seq in batches:
                seconds = self.batch_seconds(model, size, seq, precision)
                free_at, core = placed.pool.earliest()
                start = max(now, free_at)
                placed.pool.occupy(core, start + seconds)
                if start > now:
                    heapq.heappush(placed.starts, start)
                queue += start - now
                finish = max(finish, start + seconds)
                shares.append(DeviceShare(self.device_id(core), seconds, *self.spend(seconds)))
        return Charge(
            queue_seconds=queue,
            device_seconds=sum(share.seconds for share in shares),
            latency_seconds=finish - now,
            usd=sum(share.usd for share in shares),
            joules=sum(share.joules for share in shares),
            devices=tuple(dict.fromkeys(share.device for share in shares)),
            shares=tuple(shares),
        )
