"""TOML reading for Python 3.10 (``tomli``) and 3.11+ (``tomllib``), with errors that name the file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentcore.accel.errors import ProfileError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


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
