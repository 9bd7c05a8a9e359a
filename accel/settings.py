"""Locations that accel reads from the environment, with defaults that work on one machine."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "AGENTCORE_CACHE_DIR"


def cache_dir() -> Path:
    """Root of agentcore's cache: ``$AGENTCORE_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentcore``, else ``~/.cache``."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentcore"
