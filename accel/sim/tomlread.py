"""TOML reading with errors that name the file (profiles, workloads and config share it)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from agentcore.accel.errors import ProfileError


def parse_toml(text: str, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ProfileError(f"{origin}: invalid TOML: {error}") from error


def read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ProfileError(f"cannot read {path}: {error}") from error
    return parse_toml(text, str(path))
