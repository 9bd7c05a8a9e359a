"""Signed checkpoints of the audit chain, written outside the database it vouches for.

A key in hand stops someone who controls the database from forging records, but not from deleting them: the
tail, everything, or both tables. A checkpoint (seq and hash of a committed record, a time, an Ed25519
signature) kept elsewhere tells verify how many records there were and what the chain looked like then.

Cadence: a gateway process anchors its latest record every ``ANCHOR_EVERY`` records or ``ANCHOR_INTERVAL_S``
seconds (whichever comes first, on a background thread, so the fsync never sits on a call), and at close;
``prune`` anchors the record it cuts after. Records appended since the last checkpoint are vouched for by the
chain key alone: deleting them is detectable only once a later checkpoint exists.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ValidationError

from agentcore.errors import ConfigError
from agentcore.gateway import canonical
from agentcore.gateway.audit_keys import signer_id

log = logging.getLogger(__name__)
ANCHORS_ENV = "AGENTCORE_AUDIT_ANCHORS"
ANCHOR_EVERY = 1000
ANCHOR_INTERVAL_S = 10.0


class Checkpoint(BaseModel):
    """Record ``seq`` had hash ``hash`` at time ``ts``; ``kind`` "prune" also vouches for a pruned prefix."""

    seq: int
    hash: str
    ts: float
    kind: Literal["anchor", "prune"] = "anchor"
    signer: str = ""
    signature: str = ""

    def message(self) -> bytes:
        return canonical.dumps({"hash": self.hash, "kind": self.kind, "seq": self.seq, "ts": self.ts}).encode()

    def signed(self, key: Ed25519PrivateKey) -> Checkpoint:
        public = key.public_key()
        return self.model_copy(update={"signer": signer_id(public), "signature": key.sign(self.message()).hex()})

    def verifies(self, trusted: dict[str, Ed25519PublicKey]) -> bool:
        public = trusted.get(self.signer)
        if public is None:
            return False
        try:
            public.verify(bytes.fromhex(self.signature), self.message())
        except (InvalidSignature, ValueError):
            return False
        return True


@runtime_checkable
class AnchorSink(Protocol):
    """Where checkpoints go: append-only, outside the audit database (a file, an object store, another db)."""

    def append(self, checkpoint: Checkpoint) -> None: ...

    def read(self) -> Iterator[Checkpoint]: ...


class JsonlAnchorSink:
    """One checkpoint per line, appended with O_APPEND (lines of several processes never interleave) and fsynced."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def append(self, checkpoint: Checkpoint) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (checkpoint.model_dump_json() + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> Iterator[Checkpoint]:
        """Every checkpoint; a line that is not one is an error naming it (a torn last line is skipped)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        except FileNotFoundError:
            raise ConfigError(f"no audit anchor file at {self.path}") from None
        for number, line in enumerate(lines, 1):
            if not line.strip() or (number == len(lines) and not line.endswith("\n")):
                continue  # a crash mid-write leaves a torn last line: it vouches for nothing
            try:
                yield Checkpoint.model_validate_json(line)
            except ValidationError as error:
                problem = error.errors()[0]["msg"]
                raise ConfigError(f"{self.path}:{number}: not an audit checkpoint: {problem}") from None


def open_sink(anchors: AnchorSink | str | Path | None) -> AnchorSink | None:
    """A sink, a JSONL path, or ``None`` for ``AGENTCORE_AUDIT_ANCHORS`` (unset: no anchors)."""
    if isinstance(anchors, str | Path):
        return JsonlAnchorSink(anchors)
    if anchors is None:
        path = os.environ.get(ANCHORS_ENV)
        return JsonlAnchorSink(path) if path else None
    if not isinstance(anchors, AnchorSink):
        raise TypeError(f"anchors must be a path or an AnchorSink, not {type(anchors).__name__}")
    return anchors


class Anchorer:
    """Writes a signed checkpoint of this process's latest record on the cadence above, off the call path."""

    def __init__(self, sink: AnchorSink, key: Ed25519PrivateKey, every: int = ANCHOR_EVERY,
                 interval_s: float = ANCHOR_INTERVAL_S) -> None:  # fmt: skip
        self.sink, self._key, self._every, self._interval_s = sink, key, every, interval_s
        self._latest: tuple[int, str] | None = None
        self._anchored: tuple[int, str] | None = None
        self._since = 0
        self._lock = threading.Lock()
        self._due = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentcore-audit-anchor", daemon=True)
        self._thread.start()

    def note(self, seq: int, hash_: str) -> None:
        """Called after each committed append: cheap (an assignment, a counter)."""
        self._latest = (seq, hash_)
        self._since += 1
        if self._since >= self._every:
            self._due.set()

    def write(self, seq: int, hash_: str, kind: Literal["anchor", "prune"] = "anchor") -> Checkpoint:
        checkpoint = Checkpoint(seq=seq, hash=hash_, ts=time.time(), kind=kind).signed(self._key)
        with self._lock:
            self.sink.append(checkpoint)
        return checkpoint

    def flush(self) -> None:
        latest = self._latest
        if latest is not None and latest != self._anchored:
            self._since = 0
            self.write(*latest)
            self._anchored = latest

    def _run(self) -> None:
        while not self._stop.is_set():
            self._due.wait(self._interval_s)
            self._due.clear()
            try:
                self.flush()
            except Exception as error:  # the chain still grows; verify reports how far anchors reach
                log.warning("audit anchor could not be written to %s: %s", self.sink, error)

    def close(self) -> None:
        """Stop the thread and anchor the latest record; a sink that fails is logged, so closing still completes."""
        self._stop.set()
        self._due.set()
        self._thread.join(timeout=5)
        try:
            self.flush()
        except Exception as error:
            log.error("closing audit anchor could not be written to %s: %s", self.sink, error)


def trusted_checkpoints(sink: AnchorSink, trusted: dict[str, Ed25519PublicKey]) -> tuple[list[Checkpoint], str | None]:
    """The sink's checkpoints, or the problem with the first one whose signature does not verify."""
    checkpoints = []
    for number, checkpoint in enumerate(sink.read(), 1):
        if not checkpoint.verifies(trusted):
            return [], f"anchor {number} (record {checkpoint.seq}) is not signed by a trusted key"
        checkpoints.append(checkpoint)
    return checkpoints, None
