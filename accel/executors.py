"""Where onnxruntime batches execute: in this process, or in Ray actors across a cluster.

The Accelerator decides *what* to run (tokenisation, batching, simulated-device accounting, receipts);
an executor only runs a list of batches of one ONNX model and returns their named outputs in order. So the
receipts and the ledger are identical whichever executor ran the batches.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnxruntime as ort

from agentcore.accel.models.registry import file_hash
from agentcore.errors import AgentCoreError, ModelError

log = logging.getLogger(__name__)

Feeds = dict[str, np.ndarray]
Outputs = dict[str, np.ndarray]
ACTOR_CPU_RESERVATION = 0.1  # Ray scheduling share of one actor; its session's threads are set separately


class ExecutorError(AgentCoreError):
    """A batch could not be executed (after its retry, on a cluster)."""


class Executor(Protocol):
    def run(self, model: Path, batches: Sequence[Feeds], outputs: list[str] | None = None) -> list[Outputs]:
        """Run every batch through ``model``; return each batch's outputs by name, in the order of ``batches``."""
        ...


def open_session(model: Path | bytes, threads: int) -> ort.InferenceSession:
    """An onnxruntime CPU session with our settings (all optimisations, ``threads`` intra-op threads)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(
            model if isinstance(model, bytes) else str(model), options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # onnxruntime raises its own untyped errors for invalid graphs
        name = "model bytes" if isinstance(model, bytes) else str(model)
        raise ModelError(f"onnxruntime cannot load {name}: {error}") from error


def run_named(session: ort.InferenceSession, feeds: Feeds, outputs: list[str] | None) -> Outputs:
    """One ``session.run`` with its results keyed by output name (all outputs when ``outputs`` is None)."""
    names = outputs or [meta.name for meta in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(feeds)), strict=True))


_sessions: dict[tuple[str, str, int], ort.InferenceSession] = {}
_sessions_lock = threading.Lock()


def local_session(path: Path, threads: int) -> ort.InferenceSession:
    """The process-wide session for an ONNX file (keyed by content, so a rebuilt file gets a new one)."""
    key = (str(path), file_hash(path), threads)
    with _sessions_lock:
        session = _sessions.get(key)
        if session is None:
            session = _sessions[key] = open_session(path, threads)
        return session


class LocalExecutor:
    """Runs batches in this process on one shared onnxruntime session per model file."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or os.cpu_count() or 1

    def run(self, model: Path, batches: Sequence[Feeds], outputs: list[str] | None = None) -> list[Outputs]:
        session = local_session(model, self.threads)
        return [run_named(session, feeds, outputs) for feeds in batches]


class RayExecutor:
    """Runs batches in Ray actors: ``workers`` actors per model file, each holding its own session.

    The model's bytes travel through Ray's object store, so worker nodes need no copy of the cache. An actor
    that dies is replaced by a new one (up to ``max_restarts`` times per worker) and its batches are retried
    once; a batch that fails again raises `ExecutorError` naming it. Nothing is dropped: every batch either
    returns its outputs or raises.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        threads_per_worker: int | None = None,
        max_restarts: int = 1,
    ) -> None:
        try:
            import ray
        except ImportError as error:
            raise ExecutorError(
                "the Ray backend needs the `ray` extra: pip install 'agentcore-governance[ray]'"
            ) from error
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = workers or max(1, len(ray.nodes()))
        self.threads_per_worker = threads_per_worker or max(1, cpus // self.workers)
        self.max_restarts = max_restarts
        self._pools: dict[str, _Pool] = {}
        self._lock = threading.Lock()

    def _pool(self, model: Path) -> _Pool:
        key = f"{model}:{file_hash(model)}"
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                # Actors of different models (encoder, evaluator heads) share the workers' cores: a full-core
                # reservation per actor would leave a second model unschedulable and hang. SPREAD puts a model's
                # actors on different nodes; each session still runs ``threads_per_worker`` threads.
                remote = self._ray.remote(num_cpus=ACTOR_CPU_RESERVATION, scheduling_strategy="SPREAD", max_restarts=0)(
                    _SessionActor
                )
                pool = self._pools[key] = _Pool(
                    remote, self._ray.put(model.read_bytes()), self.threads_per_worker, self.workers, self.max_restarts
                )
            return pool

    def actors(self, model: Path) -> list[Any]:
        """The live actor handles serving ``model`` (for operations and tests)."""
        return list(self._pool(model).actors)

    def run(self, model: Path, batches: Sequence[Feeds], outputs: list[str] | None = None) -> list[Outputs]:
        from ray.exceptions import RayActorError

        pool = self._pool(model)
        slots = [index % len(pool.actors) for index in range(len(batches))]
        sent = [pool.actors[slot] for slot in slots]
        pending = [actor.run.remote(feeds, outputs) for actor, feeds in zip(sent, batches, strict=True)]
        results: list[Outputs] = []
        for index, ref in enumerate(pending):
            try:
                results.append(self._ray.get(ref))
                continue
            except RayActorError as first:
                log.warning("batch %d of %s failed (%s); retrying once", index, model.name, type(first).__name__)
            try:
                actor = pool.replace(slots[index], sent[index])
                results.append(self._ray.get(actor.run.remote(batches[index], outputs)))
            except (RayActorError, ExecutorError) as second:
                raise ExecutorError(
                    f"batch {index} of {len(batches)} for {model.name} failed twice (its Ray actor died: {second}); "
                    "check the workers' memory and logs"
                ) from second
        return results


class _Pool:
    """The actors serving one model, and how many more times each may be replaced."""

    def __init__(self, remote: Any, blob: Any, threads: int, workers: int, max_restarts: int) -> None:
        self._remote, self._blob, self._threads = remote, blob, threads
        self.actors = [remote.remote(blob, threads) for _ in range(workers)]
        self._restarts_left = [max_restarts] * workers
        self._lock = threading.Lock()

    def replace(self, slot: int, dead: Any) -> Any:
        """A live actor for ``slot``: a new one if ``dead`` is still there (once per restart allowed)."""
        with self._lock:
            if self.actors[slot] is dead:
                if self._restarts_left[slot] == 0:
                    raise ExecutorError(f"worker {slot} died and has no restarts left")
                self._restarts_left[slot] -= 1
                self.actors[slot] = self._remote.remote(self._blob, self._threads)
            return self.actors[slot]


class _SessionActor:
    """A Ray actor holding one onnxruntime session (created from model bytes shipped by the driver)."""

    def __init__(self, model: bytes, threads: int) -> None:
        self._session = open_session(model, threads)

    def run(self, feeds: Feeds, outputs: list[str] | None) -> Outputs:
        return run_named(self._session, feeds, outputs)

    def pid(self) -> int:
        return os.getpid()
