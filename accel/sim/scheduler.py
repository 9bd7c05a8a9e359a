"""The discrete-event scheduler: per-model queues, dynamic batching, priorities, fair share, admission.

The virtual clock advances from one batch dispatch to the next, not from one arrival to the next:
arrivals are sorted arrays, a model's queue is a set of index ranges into them, and each dispatch
finds with binary search which requests have arrived. A batch starts when a replica core is free and
either ``max_batch`` requests wait or the oldest has waited ``max_delay`` (Triton's and Ray Serve's
rule). Requests arriving while ``max_queue`` already wait are rejected and counted, never dropped.
Within a batch, higher priority streams go first; equal priorities share by tenant weight.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from agentcore.accel.sim.models import SimModel, resolve_model
from agentcore.accel.sim.placement import Demand, ReplicaPool, place
from agentcore.accel.sim.service import ServiceCache
from agentcore.accel.sim.timing import ServiceTable
from agentcore.accel.sim.workload import Workload

Progress = Callable[[int, int], None]
_PROGRESS_EVERY = 2048  # dispatches between progress callbacks


@dataclass
class StreamState:
    """One stream's arrivals and what has become of them."""

    tenant: str
    priority: int
    bucket: int
    times: np.ndarray
    pending: deque[list[int]] = field(default_factory=deque)  # [lo, hi) index ranges not served or rejected
    seen: int = 0  # arrivals with a lower index have reached the queue (then waited, were served or rejected)
    queued: int = 0  # of those, how many are waiting now
    rejected: int = 0
    served_lo: list[int] = field(default_factory=list)
    served_hi: list[int] = field(default_factory=list)
    served_start: list[float] = field(default_factory=list)
    served_end: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.times):
            self.pending.append([0, len(self.times)])

    def kth_time(self, k: int) -> float:
        """Arrival time of the k-th (1-based) request not yet served or rejected."""
        for lo, hi in self.pending:
            if k <= hi - lo:
                return float(self.times[lo + k - 1])
            k -= hi - lo
        return math.inf

    def first_times(self, k: int) -> np.ndarray:
        """Arrival times of the first ``k`` pending requests (fewer when fewer remain)."""
        parts = []
        for lo, hi in self.pending:
            parts.append(self.times[lo : min(hi, lo + k)])
            k -= hi - lo
            if k <= 0:
                break
        return np.concatenate(parts) if parts else np.empty(0)

    def reject_last(self, count: int, upto: int) -> None:
        """Reject the ``count`` newest arrivals before index ``upto`` (all in the last pending range)."""
        last = self.pending[-1]
        start = upto - count
        tail = [upto, last[1]]
        last[1] = start
        if last[0] == last[1]:
            self.pending.pop()
        if tail[0] < tail[1]:
            self.pending.append(tail)
        self.rejected += count

    def take(self, k: int, start: float, end: float) -> None:
        """Serve the ``k`` oldest pending requests in a batch running from ``start`` to ``end``."""
        self.queued -= k
        while k:
            rng = self.pending[0]
            n = min(k, rng[1] - rng[0])
            self.served_lo.append(rng[0])
            self.served_hi.append(rng[0] + n)
            self.served_start.append(start)
            self.served_end.append(end)
            rng[0] += n
            k -= n
            if rng[0] == rng[1]:
                self.pending.popleft()


@dataclass
class ModelState:
    name: str
    streams: list[StreamState]
    pool: ReplicaPool
    tables: dict[int, ServiceTable]  # by sequence bucket
    max_batch: int
    max_delay: float
    max_queue: int
    weights: dict[str, float]
    tenant_served: dict[str, float] = field(default_factory=dict)
    batches: list[tuple[int, float, float, int]] = field(default_factory=list)  # core, start, end, size

    def next_dispatch(self) -> tuple[float, int] | None:
        """(start time, core) of this model's next batch, or None when every request is served or rejected."""
        streams = self.streams
        if len(streams) == 1:
            head = streams[0].kth_time(1)
            full = streams[0].kth_time(self.max_batch)
        else:
            head = min(stream.kth_time(1) for stream in streams)
            if head == math.inf:
                return None
            firsts = np.concatenate([stream.first_times(self.max_batch) for stream in streams])
            full = (
                float(np.partition(firsts, self.max_batch - 1)[self.max_batch - 1])
                if len(firsts) >= self.max_batch
                else math.inf
            )
        if head == math.inf:
            return None
        free_at, core = self.pool.earliest()
        return max(free_at, min(full, head + self.max_delay)), core

    def admit(self, now: float) -> int:
        """Move arrivals up to ``now`` into the queue, rejecting those beyond ``max_queue``; return the queue length."""
        reached = [int(np.searchsorted(stream.times, now, side="right")) for stream in self.streams]
        entering = [upto - stream.seen for upto, stream in zip(reached, self.streams, strict=True)]
        queued = sum(stream.queued for stream in self.streams)
        excess = queued + sum(entering) - self.max_queue
        if excess > 0:
            self._reject_newest(excess, entering)
        for stream, upto, admitted in zip(self.streams, reached, entering, strict=True):
            stream.seen = upto
            stream.queued += admitted
        return sum(stream.queued for stream in self.streams)

    def _reject_newest(self, excess: int, entering: list[int]) -> None:
        """Reject the ``excess`` latest of the entering arrivals, across streams, and shrink ``entering``."""
        if len(self.streams) == 1:
            counts = [excess]
        else:
            windows = [
                stream.times[stream.seen : stream.seen + n] for stream, n in zip(self.streams, entering, strict=True)
            ]
            owner = np.concatenate([np.full(len(w), i) for i, w in enumerate(windows)])
            order = np.argsort(np.concatenate(windows), kind="stable")
            counts = np.bincount(owner[order[len(order) - excess :]], minlength=len(self.streams)).tolist()
        for index, (stream, count) in enumerate(zip(self.streams, counts, strict=True)):
            if count:
                stream.reject_last(count, stream.seen + entering[index])
                entering[index] -= count

    def allocate(self, slots: int) -> list[int]:
        """Requests to take from each stream: by priority, then weighted fair share between tenants."""
        streams = self.streams
        if len(streams) == 1:
            return [min(slots, streams[0].queued)]
        take = [0] * len(streams)
        for priority in sorted({stream.priority for stream in streams}, reverse=True):
            members = [i for i, stream in enumerate(streams) if stream.priority == priority and stream.queued]
            wanted = sum(streams[i].queued for i in members)
            if wanted <= slots:
                for i in members:
                    take[i] = streams[i].queued
                    self._credit(streams[i].tenant, take[i])
                slots -= wanted
                continue
            self._share(members, slots, take)
            break
        return take

    def _credit(self, tenant: str, count: int) -> None:
        self.tenant_served[tenant] = self.tenant_served.get(tenant, 0.0) + count / self.weights.get(tenant, 1.0)

    def _share(self, members: list[int], slots: int, take: list[int]) -> None:
        """Give slots one at a time to the tenant with the least weighted service (start-time fair queueing)."""
        streams, served = self.streams, self.tenant_served
        floor = min(served.get(streams[i].tenant, 0.0) for i in members)
        heap = []
        for i in members:
            tenant = streams[i].tenant
            served[tenant] = max(served.get(tenant, 0.0), floor)  # an idle tenant banks no credit
            heap.append((served[tenant], i))
        heapq.heapify(heap)
        while slots and heap:
            _, i = heapq.heappop(heap)
            take[i] += 1
            slots -= 1
            self._credit(streams[i].tenant, 1)
            if take[i] < streams[i].queued:
                heapq.heappush(heap, (served[streams[i].tenant], i))

    def dispatch(self, start: float, core: int) -> int:
        """Run one batch on ``core`` from ``start``; return its size."""
        waiting = self.admit(start)
        counts = self.allocate(min(self.max_batch, waiting))
        size = sum(counts)
        bucket = max(stream.bucket for stream, count in zip(self.streams, counts, strict=True) if count)
        end = start + float(self.tables[bucket].seconds[size])
        for stream, count in zip(self.streams, counts, strict=True):
            if count:
                stream.take(count, start, end)
        self.pool.occupy(core, end)
        self.batches.append((core, start, end, size))
        return size


@dataclass
class SimulationRun:
    """Raw outcome of a run: the model states (with every batch and served range) and the wall time."""

    models: list[ModelState]
    placement: dict[str, list[int]]
    demands: list[Demand]
    wall_seconds: float
    dispatches: int


def build_models(workload: Workload, service: ServiceCache, models: dict[str, SimModel] | None = None) -> SimulationRun:
    """Cost, place and queue every model of ``workload`` (nothing simulated yet)."""
    params = service.params
    times = workload.arrival_times()
    by_model: dict[str, list[int]] = {}
    for index, stream in enumerate(workload.streams):
        by_model.setdefault(stream.model, []).append(index)
    resolved = {name: (models or {}).get(name) or resolve_model(name) for name in by_model}
    tables: dict[str, dict[int, ServiceTable]] = {}
    demands = []
    for name, indices in by_model.items():
        buckets = {params.bucket(workload.streams[i].seq) for i in indices}
        tables[name] = {b: service.table(resolved[name], b, workload.precision, workload.max_batch) for b in buckets}
        largest = tables[name][max(buckets)]
        detail = f"at batch {workload.max_batch}, {max(buckets)} tokens, {workload.precision}"
        demands.append(Demand(model=name, bytes=float(largest.memory_bytes[workload.max_batch]), detail=detail))
    placement = place(demands, service.profile)
    core_free = [0.0] * service.profile.cores
    states = []
    for name, indices in by_model.items():
        streams = [
            StreamState(
                tenant=workload.streams[i].tenant,
                priority=workload.streams[i].priority,
                bucket=params.bucket(workload.streams[i].seq),
                times=times[i],
            )
            for i in indices
        ]
        states.append(
            ModelState(
                name=name,
                streams=streams,
                pool=ReplicaPool(placement[name], core_free),
                tables=tables[name],
                max_batch=workload.max_batch,
                max_delay=workload.max_delay_ms / 1000,
                max_queue=workload.max_queue,
                weights=dict(workload.weights),
            )
        )
    return SimulationRun(models=states, placement=placement, demands=demands, wall_seconds=0.0, dispatches=0)


def run(
    workload: Workload,
    service: ServiceCache,
    *,
    progress: Progress | None = None,
    models: dict[str, SimModel] | None = None,
) -> SimulationRun:
    """Simulate ``workload`` on ``service.profile``: every batch dispatch in global time order."""
    simulation = build_models(workload, service, models)
    started = time.perf_counter()
    total = sum(len(stream.times) for model in simulation.models for stream in model.streams)
    done = 0
    events: list[tuple[float, int, int]] = []
    for index, model in enumerate(simulation.models):
        candidate = model.next_dispatch()
        if candidate is not None:
            events.append((candidate[0], index, candidate[1]))
    heapq.heapify(events)
    core_free = simulation.models[0].pool.core_free if simulation.models else []
    dispatches = 0
    while events:
        start, index, core = heapq.heappop(events)
        model = simulation.models[index]
        if core_free[core] > start:  # another model took this core meanwhile: plan again
            candidate = model.next_dispatch()
        else:
            done += model.dispatch(start, core)
            dispatches += 1
            if progress is not None and dispatches % _PROGRESS_EVERY == 0:
                progress(done, total)
            candidate = model.next_dispatch()
        if candidate is not None:
            heapq.heappush(events, (candidate[0], index, candidate[1]))
    if progress is not None:
        progress(total, total)
    simulation.wall_seconds = time.perf_counter() - started
    simulation.dispatches = dispatches
    return simulation


def served_latencies(stream: StreamState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per served request (in arrival order): arrival time, queue seconds, end-to-end seconds."""
    lo = np.asarray(stream.served_lo, dtype=np.int64)
    hi = np.asarray(stream.served_hi, dtype=np.int64)
    if not len(lo):
        empty = np.empty(0)
        return empty, empty, empty
    lengths = hi - lo
    offsets = np.repeat(lo - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    index = np.arange(lengths.sum()) + offsets
    arrival = stream.times[index]
    start = np.repeat(np.asarray(stream.served_start), lengths)
    end = np.repeat(np.asarray(stream.served_end), lengths)
    return arrival, start - arrival, end - arrival
