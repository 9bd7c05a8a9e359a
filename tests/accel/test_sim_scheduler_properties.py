"""Invariants of the scheduler on random workloads: nothing lost, no core double-booked, rules obeyed."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore.accel.sim.profiles import load_catalog
from agentcore.accel.sim.scheduler import run, served_latencies
from agentcore.accel.sim.service import ServiceCache
from agentcore.accel.sim.workload import BurstArrivals, PoissonArrivals, Stream, Workload

SERVICE = ServiceCache(load_catalog().profile("trn2"))  # 8 cores

arrivals = st.one_of(
    st.builds(PoissonArrivals, rate=st.floats(1e3, 5e5), requests=st.integers(1, 300)),
    st.builds(BurstArrivals, size=st.integers(1, 200), bursts=st.integers(1, 3), interval_s=st.floats(1e-4, 1e-2)),
)
streams = st.lists(
    st.builds(
        Stream,
        model=st.sampled_from(["mlp-256x2", "mlp-512x2"]),
        tenant=st.sampled_from(["a", "b", "c"]),
        priority=st.integers(0, 2),
        seq=st.just(1),
        arrivals=arrivals,
    ),
    min_size=1,
    max_size=4,
)


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    max_batch = draw(st.integers(1, 16))
    return Workload(
        streams=draw(streams),
        max_batch=max_batch,
        max_delay_ms=draw(st.floats(0, 3)),
        max_queue=draw(st.integers(max_batch, 400)),
        weights={"a": draw(st.floats(0.5, 4)), "b": 1.0},
        seed=draw(st.integers(0, 1000)),
    )


@settings(max_examples=60, deadline=None)
@given(workloads())
def test_every_request_is_served_once_or_rejected_and_cores_never_overlap(workload: Workload) -> None:
    simulation = run(workload, SERVICE)
    by_core: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for model in simulation.models:
        for core, start, end, size in model.batches:
            assert 1 <= size <= workload.max_batch and end > start
            by_core[core].append((start, end))
        for stream in model.streams:
            arrival, queue, total = served_latencies(stream)
            assert len(arrival) + stream.rejected == len(stream.times)
            assert (queue >= -1e-12).all() and (total > queue).all()
            served = np.concatenate(
                [np.arange(lo, hi) for lo, hi in zip(stream.served_lo, stream.served_hi, strict=True)]
                or [np.empty(0, int)]
            )
            assert len(np.unique(served)) == len(served)  # no request served twice
            assert (np.diff(np.asarray(stream.served_start)) >= 0).all()  # FIFO within a stream
    for intervals in by_core.values():
        intervals.sort()
        assert all(a_end <= b_start + 1e-12 for (_, a_end), (b_start, _) in pairwise(intervals))
