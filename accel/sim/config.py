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
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agentcore.accel.errors import ProfileError
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog
from agentcore.config import find_config
from agentcore.errors import ConfigError

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


def load_config(folder: Path | None = None) -> AccelConfig:
    """Settings from the config file found for ``folder`` (:func:`agentcore.config.find_config`); else defaults."""
    try:
        found = find_config(folder)
        section = None if found is None else found.section("accel")
    except ConfigError as error:
        raise ProfileError(str(error)) from error
    if found is None or section is None:
        return AccelConfig()
    try:
        config = AccelConfig.model_validate(section)
    except ValidationError as error:
        raise ProfileError(f"{found.path} [accel]: {error}") from error
    resolved = [path if path.is_absolute() else found.path.parent / path for path in config.profiles]
    return config.model_copy(update={"profiles": resolved})
