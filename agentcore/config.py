"""Where agentcore finds its settings and its database: one rule for every command and API.

1. ``agentcore.toml`` (or a ``[tool.agentcore]`` table in ``pyproject.toml``) in the working directory or the
   nearest folder above it; its ``database`` is a SQLAlchemy URL or a SQLite path relative to that file;
2. else ``$AGENTCORE_DATABASE_URL``;
3. else ``.agentcore/agentcore.db`` under the working directory.

So ``agentcore gateway audit verify`` run from any sub-folder of a project checks the project's database, and a
report folder with its own ``agentcore.toml`` (the demo's) is inspected by running commands from inside it.
This module imports nothing of ours but the errors, so every sub-package may use it.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from agentcore.errors import ConfigError

CONFIG_FILE = "agentcore.toml"
DATABASE_ENV = "AGENTCORE_DATABASE_URL"
DEFAULT_DATABASE = Path(".agentcore") / "agentcore.db"


@dataclass(frozen=True)
class ConfigFile:
    """The settings found for a folder: the file they came from and its agentcore table."""

    path: Path
    settings: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any] | None:
        """One table (``[accel]``), or None when the file has none; a non-table value is a ConfigError."""
        value = self.settings.get(name)
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"{self.path}: [{name}] must be a table, not {type(value).__name__}")
        return value


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from error


def find_config(start: Path | None = None) -> ConfigFile | None:
    """The nearest ``agentcore.toml`` or ``pyproject.toml`` with ``[tool.agentcore]`` at or above ``start``."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        own = candidate / CONFIG_FILE
        if own.is_file():
            return ConfigFile(own, _read(own))
        project = candidate / "pyproject.toml"
        if project.is_file():
            table = _read(project).get("tool", {}).get("agentcore")
            if isinstance(table, dict):
                return ConfigFile(project, table)
    return None


def _installed_driver(url: str) -> str:
    """A bare ``postgresql://`` means psycopg (3) since SQLAlchemy 2.1, but the ``postgres`` extra installs
    psycopg2: without psycopg 3 the URL names psycopg2, or the documented ``postgresql://`` could not connect."""
    scheme, _, rest = url.partition("://")
    if scheme == "postgresql" and find_spec("psycopg") is None and find_spec("psycopg2") is not None:
        return f"postgresql+psycopg2://{rest}"
    return url


_URL_SCHEME = re.compile(r"[a-z][a-z0-9+.-]+(?=:)", re.IGNORECASE).match  # two letters or more: C:\\ is a path


def as_url(value: str, base: Path) -> str:
    """A SQLAlchemy URL as is (a bare ``postgresql://`` with the driver installed); a bare path becomes a SQLite
    URL, resolved against ``base`` when relative."""
    if "://" in value:
        return _installed_driver(value)
    scheme = _URL_SCHEME(value)
    if scheme is not None:  # "redis:/x", "postgresql:host/db": a URL short of its "//", not a file name
        raise ConfigError(
            f"{value!r} reads as a {scheme[0]}: URL without '//' (write {scheme[0]}://...); "
            f"for a file of that name write ./{value}"
        )
    path = Path(value).expanduser()
    return f"sqlite:///{path if path.is_absolute() else base / path}"


def database_url(start: Path | None = None) -> str:
    """The database every part of agentcore uses when none is passed (see the module docstring for the rule)."""
    config = find_config(start)
    if config is not None and "database" in config.settings:
        value = config.settings["database"]
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{config.path}: database must be a URL or a path in quotes, not {value!r}")
        return as_url(value, config.path.parent)
    cwd = (start or Path.cwd()).resolve()
    from_env = os.environ.get(DATABASE_ENV)
    if from_env:
        return as_url(from_env, cwd)
    return as_url(str(DEFAULT_DATABASE), cwd)
