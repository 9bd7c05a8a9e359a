"""The Accelerator: the one door through which agentcore runs models, and where every run is receipted.

One onnxruntime session per model variant is shared by every ``Accelerator`` in the process (sessions
are thread-safe for ``run``), texts are sorted by length and batched so that padding is small, and each
call returns a :class:`Receipt` that says what was run for whom and how long it took on this CPU.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentcore.accel.executors import Executor, LocalExecutor, RayExecutor
from agentcore.accel.ledger import Ledger
from agentcore.accel.metering import Meter, sequence_length
from agentcore.accel.models.registry import VARIANTS, BuiltModel, ensure_built, load_verified
from agentcore.accel.sim.config import load_config
from agentcore.accel.sim.device import SimulatedDevice
from agentcore.accel.tokenizer import EncoderTokenizer, pad_batch
from agentcore.errors import ModelError

DEFAULT_BATCH_SIZE = 32


class Receipt(BaseModel):
    """What one accelerator call ran, for whom, its real CPU time, and its simulated device cost."""

    model_config = ConfigDict(frozen=True)

    model: str
    variant: str
    tenant: str
    agent: str | None = None
    user: str | None = None
    items: int
    batches: int
    tokens: int = 0
    kind: str = "embedding"  # what ran: embedding, llm, ...
    input_tokens: int = 0
    output_tokens: int = 0
    truncated: int = 0
    cpu_seconds: float
    # simulated on ``profile`` (see agentcore.accel.sim): not measured
    queue_seconds: float = 0.0
    device_seconds: float = 0.0
    latency_seconds: float = 0.0
    usd: float = 0.0
    joules: float = 0.0
    profile: str | None = None
    devices: tuple[str, ...] = ()
    rejected: bool = False


@dataclass(frozen=True)
class EmbeddingResult:
    """Unit-norm float32 vectors ``[n, hidden]`` in input order, and the receipt of the call."""

    vectors: np.ndarray
    receipt: Receipt


@dataclass(frozen=True)
class InferenceResult:
    """Named outputs of one ONNX model run, and the receipt of the call."""

    outputs: dict[str, np.ndarray]
    receipt: Receipt


def _executor(backend: str, address: str | None, workers: int | None, threads: int) -> Executor:
    if backend == "local":
        return LocalExecutor(threads)
    if backend == "ray":
        return RayExecutor(address, workers=workers)
    raise ModelError(f"unknown backend {backend!r}; choose local or ray")


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not a single str; wrap it: [text]")
    checked = list(texts)
    for index, text in enumerate(checked):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] is {type(text).__name__}, expected str")
    return checked


class Accelerator:
    """Runs agentcore's models on onnxruntime and receipts every call to a tenant, agent and user.

    ``variant`` picks the encoder build (``"fp32"`` or ``"int8"``); ``model_dir`` points at an HF-layout
    folder or model wheel (default: ``$AGENTCORE_MODEL_DIR``, else all-MiniLM-L6-v2 from PyPI).
    ``device`` is the simulated fleet each call is charged to (a profile name or a ``SimulatedDevice``,
    default: ``[accel] profile`` of agentcore.toml, else trn2.48xlarge); ``ledger`` persists receipts
    (default: the agentcore database; ``None`` keeps none). ``backend="ray"`` runs the onnxruntime batches in
    Ray actors (``address`` of the cluster, ``workers`` actors per model); receipts and the ledger are the same
    as with the default local backend. Unset, ``backend``/``address``/``workers`` come from ``[accel]``.
    """

    def __init__(
        self,
        *,
        variant: str = "fp32",
        model_dir: str | os.PathLike[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
        device: SimulatedDevice | str | None = None,
        ledger: Ledger | Literal["default"] | None = "default",
        backend: Literal["local", "ray"] | None = None,
        address: str | None = None,
        workers: int | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise ModelError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.variant = variant
        self.batch_size = batch_size
        self.threads = threads or os.cpu_count() or 1
        self._model_dir = model_dir
        self._encoder: BuiltModel | None = None
        self._tokenizer: EncoderTokenizer | None = None
        self._init_lock = threading.Lock()
        self.meter = Meter(device, ledger)
        if backend is None:  # the [accel] section of agentcore.toml decides
            config = load_config()
            backend, address, workers = config.backend, address or config.address, workers or config.workers
        self.executor = _executor(backend, address, workers, self.threads)

    @property
    def ledger(self) -> Ledger | None:
        """Where receipts are persisted; ``ledger.spend(tenant=..., window=...)`` answers budget questions."""
        return self.meter.ledger

    @property
    def encoder(self) -> BuiltModel:
        """The built text encoder (built on first use, verified by hash before loading)."""
        with self._init_lock:
            if self._encoder is None:
                self._encoder = ensure_built(self._model_dir)
            return self._encoder

    @property
    def dimension(self) -> int:
        return self.encoder.hidden_size

    def _encoder_tokenizer(self) -> EncoderTokenizer:
        encoder = self.encoder
        with self._init_lock:
            if self._tokenizer is None:
                self._tokenizer = EncoderTokenizer(encoder.tokenizer_path, encoder.max_tokens)
            return self._tokenizer

    def embed(
        self,
        texts: Sequence[str],
        *,
        tenant: str = "default",
        agent: str | None = None,
        user: str | None = None,
        variant: str | None = None,
    ) -> EmbeddingResult:
        """Unit-norm sentence embeddings of ``texts`` (in order), charged to ``tenant``/``agent``/``user``."""
        checked = _check_texts(texts)
        variant = variant or self.variant
        encoder = self.encoder
        if not checked:
            empty = np.zeros((0, encoder.hidden_size), dtype=np.float32)
            return EmbeddingResult(
                empty,
                Receipt(
                    model=encoder.name,
                    variant=variant,
                    tenant=tenant,
                    agent=agent,
                    user=user,
                    items=0,
                    batches=0,
                    cpu_seconds=0.0,
                ),
            )
        path = load_verified(encoder, variant)
        tokens = self._encoder_tokenizer().encode(checked)
        order = np.argsort(tokens.lengths, kind="stable")
        chunks = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        shapes = [(len(chunk), max(tokens.lengths[i] for i in chunk)) for chunk in chunks]
        charge = self.meter.charge(path, encoder.name, variant, shapes)
        vectors = np.empty((len(checked), encoder.hidden_size), dtype=np.float32)
        started = time.perf_counter()
        feeds = [
            dict(zip(("input_ids", "attention_mask"), pad_batch([tokens.ids[i] for i in chunk]), strict=True))
            for chunk in (chunks if not charge.rejected else [])
        ]
        for chunk, outputs in zip(chunks, self.executor.run(path, feeds, ["embeddings"]), strict=False):
            vectors[chunk] = outputs["embeddings"]
        batches = len(feeds)
        receipt = Receipt(
            model=encoder.name,
            variant=variant,
            tenant=tenant,
            agent=agent,
            user=user,
            items=len(checked),
            batches=batches,
            tokens=sum(tokens.lengths),
            truncated=sum(tokens.truncated),
            cpu_seconds=time.perf_counter() - started,
            **self.meter.fields(charge),
        )
        return EmbeddingResult(vectors, self.meter.settle(receipt, charge))

    def infer(
        self,
        model: str | os.PathLike[str],
        inputs: Mapping[str, np.ndarray],
        *,
        tenant: str = "default",
        agent: str | None = None,
        user: str | None = None,
    ) -> InferenceResult:
        """Run an ONNX model file (e.g. a small task head shipped in the package) on named inputs."""
        path = Path(model)
        if not path.is_file():
            raise ModelError(f"ONNX model {path} does not exist")
        items = int(next(iter(inputs.values())).shape[0]) if inputs else 0
        charge = self.meter.charge(path, path.stem, "fp32", [(max(items, 1), sequence_length(inputs))])
        started = time.perf_counter()
        try:
            outputs = self.executor.run(path, [dict(inputs)])[0] if not charge.rejected else {}
        except Exception as error:  # onnxruntime's errors are untyped; name the model and the inputs
            raise ModelError(f"running {path.name} on inputs {sorted(inputs)} failed: {error}") from error
        elapsed = time.perf_counter() - started
        receipt = Receipt(
            model=path.stem,
            variant="fp32",
            tenant=tenant,
            agent=agent,
            user=user,
            items=items,
            batches=0 if charge.rejected else 1,
            cpu_seconds=elapsed,
            **self.meter.fields(charge),
        )
        return InferenceResult(outputs, self.meter.settle(receipt, charge))
