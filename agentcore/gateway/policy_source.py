"""Where the gateway's policy bundle comes from, and hot reload when its files change.

A reload that fails to parse or check keeps the last good bundle active; the error is logged and kept in
``status`` (and persisted by the gateway for ``agentcore gateway status``). Checking for changes is a stat of the
policy files at most once per ``interval_s``, so the hot path pays nothing measurable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from agentcore.policies.context import DecisionContext
from agentcore.policies.model import Decision, Request

log = logging.getLogger(__name__)


class Decider(Protocol):
    """What the gateway needs of a policy engine."""

    def decide(self, request: Request, context: DecisionContext) -> Decision: ...


class PolicyStatus(BaseModel):
    """What `agentcore gateway status` shows about the active bundle."""

    paths: list[str]
    bundle_hash: str
    loaded_at: float
    last_error: str | None = None
    last_error_at: float | None = None


def load_engine(paths: Sequence[Path]) -> Decider:
    """Compile the bundle at ``paths`` (files or folders); an empty folder is a default-deny bundle."""
    from agentcore.policies.engine import PolicyEngine

    engine: Decider = PolicyEngine.from_paths([str(p) for p in paths])
    return engine


def _fingerprint(paths: Sequence[Path]) -> tuple[tuple[str, int, int], ...]:
    entries: list[tuple[str, int, int]] = []
    for root in paths:
        files = sorted(root.rglob("*.policy")) if root.is_dir() else [root]
        for file in files:
            try:
                stat = file.stat()
            except FileNotFoundError:
                continue
            entries.append((str(file), stat.st_mtime_ns, stat.st_size))
    return tuple(entries)


class PolicySource:
    """Holds the active engine; ``current()`` reloads it when the files changed (checked every ``interval_s``)."""

    def __init__(
        self,
        policies: Any,
        *,
        reload: bool = True,
        interval_s: float = 1.0,
        on_change: Callable[[PolicyStatus], None] | None = None,
    ) -> None:
        self.on_change = on_change
        self.paths: list[Path] = []
        if policies is None or isinstance(policies, str | Path):
            self.paths = [Path(policies)] if policies is not None else []
        elif isinstance(policies, list | tuple):
            self.paths = [Path(p) for p in policies]
        if self.paths or policies is None:
            for path in self.paths:
                if not path.exists():
                    raise FileNotFoundError(f"policy path {path} does not exist; pass a .policy file or a folder")
            self._engine: Decider = load_engine(self.paths)
        else:
            self._engine = policies  # an already-built engine
        self.reload = reload and bool(self.paths)
        self.interval_s = interval_s
        self._stamp = _fingerprint(self.paths)
        self._next_check = time.monotonic() + interval_s
        self._lock = threading.Lock()
        self.status = PolicyStatus(
            paths=[str(p) for p in self.paths], bundle_hash=self._bundle_hash(self._engine), loaded_at=time.time()
        )

    @staticmethod
    def _bundle_hash(engine: Decider) -> str:
        return str(getattr(engine, "bundle_hash", ""))

    def current(self) -> Decider:
        if self.reload and time.monotonic() >= self._next_check:
            self.check_now()
        return self._engine

    def check_now(self) -> bool:
        """Reload if the files changed; return True when a new bundle became active."""
        with self._lock:
            self._next_check = time.monotonic() + self.interval_s
            stamp = _fingerprint(self.paths)
            if stamp == self._stamp:
                return False
            self._stamp = stamp
            try:
                engine = load_engine(self.paths)
            except Exception as exc:  # any failure keeps the last good bundle
                log.error("policy reload failed, keeping bundle %s: %s", self.status.bundle_hash[:12], exc)
                self.status = self.status.model_copy(update={"last_error": str(exc), "last_error_at": time.time()})
                self._notify()
                return False
            self._engine = engine
            self.status = PolicyStatus(
                paths=self.status.paths, bundle_hash=self._bundle_hash(engine), loaded_at=time.time()
            )
            log.info("policy bundle reloaded: %s", self.status.bundle_hash[:12])
            self._notify()
            return True

    def _notify(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change(self.status)
            except Exception:  # status reporting must never break enforcement
                log.exception("could not publish gateway status")
