"""The ``[accel]`` settings of ``agentcore.toml`` (or ``[tool.agentcore.accel]`` in pyproject.toml).

```toml
[accel]
profile = "trn3-ultraserver-gen2"          # the fleet real calls are charged to
profiles = ["ops/our-chips.toml"]          # extra profile files or folders
backend = "ray"                            # run onnxruntime in Ray actors (default "local")
address = "ray://head:10001"               # the cluster; omit for a local Ray instance
[accel.overrides]
"trn3.usd_per_chip_hour" = 4.10            # replace an assumption with your number
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agentcore.accel.errors import ProfileError
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog
from agentcore.accel.sim.tomlread import read_toml

DEFAULT_PROFILE = "trn2.48xlarge"


class AccelConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: str = DEFAULT_PROFILE
    profiles: list[Path] = []
    overrides: dict[str, float] = {}
    backend: Literal["local", "ray"] = "local"
    address: str | None = None
    workers: int | None = None

    def catalog(self) -> ProfileCatalog:
        return load_catalog(self.profiles, self.overrides)


def _section(folder: Path) -> tuple[dict[str, Any], Path] | None:
    own = folder / "agentcore.toml"
    if own.is_file():
        return read_toml(own).get("accel", {}), own
    project = folder / "pyproject.toml"
    if project.is_file():
        section = read_toml(project).get("tool", {}).get("agentcore", {}).get("accel")
        if section is not None:
            return section, project
    return None


def load_config(folder: Path | None = None) -> AccelConfig:
    """Settings from the working directory's config file; defaults when there is none."""
    base = folder or Path.cwd()
    found = _section(base)
    if found is None:
        return AccelConfig()
    section, origin = found
    try:
        config = AccelConfig.model_validate(section)
    except ValidationError as error:
        raise ProfileError(f"{origin} [accel]: {error}") from error
    resolved = [path if path.is_absolute() else origin.parent / path for path in config.profiles]
    return config.model_copy(update={"profiles": resolved})
