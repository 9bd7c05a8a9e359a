"""Where the gateway's policy bundle comes from, and hot reload when its files change.

A reload that fails to parse or check keeps the last good bundle active; the error is logged and kept in
``status`` (and persisted by the gateway for ``agentcore gateway status``). Checking for changes is a stat of the
policy files at most once per ``interval_s``, so the hot path pays nothing measurable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from agentcore.errors import ConfigError
from agentcore.policies.engine import POLICY_SUFFIX, PolicyEngine
from agentcore.policies.parser import SCHEMA_SUFFIX

log = logging.getLogger(__name__)


class PolicyStatus(BaseModel):
    """What `agentcore gateway status` shows about the active bundle."""

    paths: list[str]
    bundle_hash: str
    loaded_at: float
    last_error: str | None = None
    last_error_at: float | None = None


def load_engine(paths: Sequence[Path]) -> PolicyEngine:
    """Compile the bundle at ``paths`` (files or folders); no policy files at all is a default-deny bundle."""
    if not _fingerprint(paths):
        return PolicyEngine.from_sources({})
    return PolicyEngine.from_paths(paths)


def _fingerprint(paths: Sequence[Path]) -> tuple[tuple[str, int, int], ...]:
    entries: list[tuple[str, int, int]] = []
    for root in paths:
        found = [*root.rglob(f"*{POLICY_SUFFIX}"), *root.rglob(f"*{SCHEMA_SUFFIX}")] if root.is_dir() else [root]
        files = sorted(found)
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
        policies: PolicyEngine | str | Path | Sequence[str | Path] | None,
        *,
        reload: bool = True,
        interval_s: float = 1.0,
        on_change: Callable[[PolicyStatus], None] | None = None,
    ) -> None:
        self.on_change = on_change
        if isinstance(policies, PolicyEngine):
            self.paths: list[Path] = []
            self._engine = policies
        else:
            if policies is None:
                self.paths = []
            elif isinstance(policies, str | Path):
                self.paths = [Path(policies)]
            else:
                self.paths = [Path(p) for p in policies]
            for path in self.paths:
                if not path.exists():
                    raise ConfigError(
                        f"policy path {path} does not exist (in {Path.cwd()}); pass a .policy file or a folder, "
                        "or run `agentcore init` to write a starter bundle into policies/"
                    )
            self._engine = load_engine(self.paths)
        self.reload = reload and bool(self.paths)
        self.interval_s = interval_s
        self._stamp = _fingerprint(self.paths)
        self._next_check = time.monotonic() + interval_s
        self._lock = threading.Lock()
        self._pinned = threading.local()  # .on: this thread's current() reloads nothing (see ``pinned``)
        self.status = PolicyStatus(
            paths=[str(p) for p in self.paths], bundle_hash=self._engine.bundle_hash, loaded_at=time.time()
        )

    def current(self) -> PolicyEngine:
        if self.reload_due() and not getattr(self._pinned, "on", False):
            self.check_now()
        return self._engine

    def reload_due(self) -> bool:
        """Will the next ``current()`` look at the files (and perhaps parse a changed bundle)?"""
        return self.reload and time.monotonic() >= self._next_check

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """Meanwhile this thread's ``current()`` keeps the active bundle: a reload waits for the next call outside.
        For a step that holds the database: a reload's status update writes to it, and another thread reloading
        at the same moment would wait for the database while this one waited for the reload."""
        before, self._pinned.on = getattr(self._pinned, "on", False), True
        try:
            yield
        finally:
            self._pinned.on = before

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
            self.status = PolicyStatus(paths=self.status.paths, bundle_hash=engine.bundle_hash, loaded_at=time.time())
            log.info("policy bundle reloaded: %s", self.status.bundle_hash[:12])
            self._notify()
            return True

    def _notify(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change(self.status)
            except Exception:  # status reporting must never break enforcement
                log.exception("could not publish gateway status")
