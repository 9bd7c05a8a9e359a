"""The files ``agentcore init`` writes: a first policy bundle with its tests, its tool schema and agentcore.toml.

They are real package data (checked by ``policy check --strict``, ``policy test`` and ``policy fmt --check`` in
the tests), and the README's tour runs against them in a fresh folder.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from agentcore.errors import ConfigError

# Where each packaged file goes, relative to the folder being initialised.
LAYOUT = {
    "starter.policy": Path("policies") / "starter.policy",
    "starter.tests.toml": Path("policies") / "starter.tests.toml",
    "tools.json": Path("tools.json"),
    "agentcore.toml": Path("agentcore.toml"),
}


def scaffold(folder: Path, *, force: bool = False) -> list[Path]:
    """Write the starter files under ``folder``; existing ones are left alone (ConfigError) unless ``force``."""
    targets = {name: folder / relative for name, relative in LAYOUT.items()}
    existing = [path for path in targets.values() if path.exists()]
    if existing and not force:
        names = ", ".join(str(path) for path in existing)
        raise ConfigError(f"{names} already exist; nothing was written (pass --force to overwrite)")
    package = files(__name__)
    for name, target in targets.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(package.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    return list(targets.values())
