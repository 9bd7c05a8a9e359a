"""Device profiles: per-chip specs read from TOML, each figure traceable to a source or a named assumption.

Systems (instances, UltraServers) are a chip times a count, and a cluster is a system times a count
(``"trn3-ultraserver-gen2:1000"``), so every total is derived rather than typed twice. A projected chip
(Trainium4) is derived from a published chip by announced ratios until real specs exist.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentcore.accel.errors import ProfileError
from agentcore.accel.sim.tomlread import parse_toml, read_toml

log = logging.getLogger(__name__)

Precision = Literal["fp32", "bf16", "fp8", "fp4"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "bf16", "fp8", "fp4")
_TFLOPS_FIELD = {"fp32": "fp32_tflops", "bf16": "bf16_tflops", "fp8": "fp8_tflops", "fp4": "fp4_tflops"}
CLUSTER_SEPARATOR = ":"
_MUST_BE_POSITIVE = ("neuron_cores", "fp32_tflops", "bf16_tflops", "fp8_tflops", "vector_tflops_per_core", "hbm_gib",
                     "hbm_tbps")  # fmt: skip


class Figure(BaseModel):
    """One number with where it comes from: a ``source`` id, or an ``assumption`` saying why it was chosen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float = Field(ge=0)
    source: str | None = None
    assumption: str | None = None

    @model_validator(mode="after")
    def _cited(self) -> Figure:
        if (self.source is None) == (self.assumption is None):
            raise ValueError("give exactly one of `source` (an id in [sources]) or `assumption` (why this value)")
        return self

    @property
    def citation(self) -> str:
        return f"source: {self.source}" if self.source else f"assumption: {self.assumption}"


class Source(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    kind: str


class ChipSpec(BaseModel):
    """Per-chip figures; TFLOPS are dense per chip, ``vector_tflops_per_core`` is one core's Vector engine."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    name: str
    projected: bool = False
    neuron_cores: Figure
    fp32_tflops: Figure
    bf16_tflops: Figure
    fp8_tflops: Figure
    fp4_tflops: Figure | None = None
    vector_tflops_per_core: Figure
    hbm_gib: Figure
    hbm_tbps: Figure
    sram_mib: Figure
    link_gbps: Figure
    link_latency_us: Figure | None = None  # per-step latency of a collective over the chip-to-chip links
    network_gbps: Figure | None = None  # scale-out network (EFA) per chip, GB/s: pipeline stages across nodes
    scaleup_chips: Figure | None = None  # largest chip-to-chip (NeuronLink / NVLink) domain it is sold in
    power_watts: Figure
    idle_watts: Figure
    usd_per_chip_hour: Figure

    @model_validator(mode="after")
    def _usable(self) -> ChipSpec:
        zero = [name for name in _MUST_BE_POSITIVE if getattr(self, name).value <= 0]
        if zero or self.neuron_cores.value != int(self.neuron_cores.value):
            raise ValueError(f"chip {self.key}: {zero or ['neuron_cores']} must be positive (whole cores)")
        return self

    @property
    def cores(self) -> int:
        return int(self.neuron_cores.value)

    def tflops(self, precision: str) -> float:
        """Dense chip peak at ``precision``; a precision the chip lacks is an error naming those it has."""
        field = _TFLOPS_FIELD.get(precision)
        figure = getattr(self, field) if field else None
        if figure is None:
            available = [p for p in PRECISIONS if getattr(self, _TFLOPS_FIELD[p]) is not None]
            raise ProfileError(f"{self.name} has no {precision!r} peak; it supports {', '.join(available)}")
        return float(figure.value)

    def figures(self) -> dict[str, Figure]:
        return {name: value for name, value in self if isinstance(value, Figure)}


class DeviceProfile(BaseModel):
    """A simulated fleet: ``chips`` copies of one chip. Per-core rates are the chip's divided by its cores."""

    model_config = ConfigDict(frozen=True)

    name: str
    chip: ChipSpec
    chips: int = Field(ge=1)
    description: str = ""

    @property
    def cores(self) -> int:
        return self.chips * self.chip.cores

    @property
    def projected(self) -> bool:
        return self.chip.projected

    def core_flops(self, precision: str) -> float:
        """Peak FLOP/s of one NeuronCore's Tensor engine at ``precision``."""
        return self.chip.tflops(precision) * 1e12 / self.chip.cores

    @property
    def core_vector_flops(self) -> float:
        return self.chip.vector_tflops_per_core.value * 1e12

    @property
    def core_hbm_bytes(self) -> float:
        """HBM share of one core (GiB = 2^30 B)."""
        return self.chip.hbm_gib.value * 2**30 / self.chip.cores

    @property
    def core_bandwidth(self) -> float:
        """HBM bandwidth share of one core in B/s (TB/s = 10^12 B/s)."""
        return self.chip.hbm_tbps.value * 1e12 / self.chip.cores

    @property
    def usd_per_hour(self) -> float:
        return self.chips * self.chip.usd_per_chip_hour.value

    @property
    def usd_per_core_second(self) -> float:
        return self.chip.usd_per_chip_hour.value / 3600 / self.chip.cores

    @property
    def core_active_watts(self) -> float:
        """Power a busy core adds above idle: (max - idle) / cores."""
        return (self.chip.power_watts.value - self.chip.idle_watts.value) / self.chip.cores

    @property
    def core_idle_watts(self) -> float:
        return self.chip.idle_watts.value / self.chip.cores

    def totals(self) -> dict[str, float]:
        """System totals derived by count (what AWS tables list per instance / UltraServer)."""
        return {
            "chips": self.chips,
            "cores": self.cores,
            "fp8_pflops": self.chips * self.chip.tflops("fp8") / 1000,
            "bf16_pflops": self.chips * self.chip.tflops("bf16") / 1000,
            "hbm_gib": self.chips * self.chip.hbm_gib.value,
            "hbm_tbps": self.chips * self.chip.hbm_tbps.value,
            "usd_per_hour": self.usd_per_hour,
            "max_kw": self.chips * self.chip.power_watts.value / 1000,
        }


class SystemSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    chip: str
    chips: Figure
    description: str = ""


class _Derived(BaseModel):
    """A projected chip: ``derive_from`` times announced ``scale`` ratios, other figures carried over."""

    model_config = ConfigDict(extra="forbid")

    name: str
    projected: bool = True
    derive_from: str
    derive_source: str
    scale: dict[str, float]


class ProfileCatalog:
    """The known chips, systems and sources; ``profile(name)`` resolves chips, systems and clusters."""

    def __init__(self, sources: Mapping[str, Source], chips: Mapping[str, ChipSpec], systems: Mapping[str, SystemSpec]):
        self.sources = dict(sources)
        self.chips = dict(chips)
        self.systems = dict(systems)
        self._check_references()

    def _check_references(self) -> None:
        for chip in self.chips.values():
            for field, figure in chip.figures().items():
                if figure.source is not None and figure.source not in self.sources:
                    raise ProfileError(f"chip {chip.key}.{field} cites unknown source {figure.source!r}")
        for key, system in self.systems.items():
            if system.chip not in self.chips:
                raise ProfileError(f"system {key!r} uses unknown chip {system.chip!r}; known: {', '.join(self.chips)}")
            if system.chips.source is not None and system.chips.source not in self.sources:
                raise ProfileError(f"system {key!r} cites unknown source {system.chips.source!r}")

    def names(self) -> list[str]:
        """Every profile name: systems first, then single chips."""
        return [*self.systems, *self.chips]

    def profile(self, name: str) -> DeviceProfile:
        """A chip (``trn3``), a system (``trn2.48xlarge``) or a cluster of systems (``trn3-ultraserver-gen2:1000``)."""
        base, _, count_text = name.partition(CLUSTER_SEPARATOR)
        count = 1
        if count_text:
            if not count_text.isdigit() or int(count_text) < 1:
                raise ProfileError(f"cluster size in {name!r} must be a positive integer, e.g. {base}:8")
            count = int(count_text)
        if base in self.systems:
            system = self.systems[base]
            chips = int(system.chips.value) * count
            description = system.description
            chip = self.chips[system.chip]
        elif base in self.chips:
            chip, chips, description = self.chips[base], count, self.chips[base].name
        else:
            close = difflib.get_close_matches(base, self.names(), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ProfileError(f"unknown device profile {base!r}; {hint}known profiles: {', '.join(self.names())}")
        if count > 1:
            description = f"cluster of {count} x {base}"
        return DeviceProfile(name=name, chip=chip, chips=chips, description=description)


def _merge(target: dict[str, Any], layer: Mapping[str, Any]) -> None:
    for section in ("sources", "chips", "systems"):
        for key, value in layer.get(section, {}).items():
            target.setdefault(section, {})[key] = value


def _derive(key: str, raw: Mapping[str, Any], chips: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    try:
        spec = _Derived.model_validate(raw)
    except ValidationError as error:
        raise ProfileError(f"projected chip {key!r}: {error}") from error
    base = chips.get(spec.derive_from)
    if base is None or "derive_from" in base:
        raise ProfileError(f"projected chip {key!r} derives from {spec.derive_from!r}, which is not a published chip")
    derived: dict[str, Any] = {"name": spec.name, "projected": True}
    carried = f"not published for {spec.name}; carried over from {spec.derive_from}"
    for field, figure in base.items():
        if not isinstance(figure, Mapping):
            continue
        if field in spec.scale:
            ratio = spec.scale[field]
            derived[field] = {"value": figure["value"] * ratio, "source": spec.derive_source}
        else:
            derived[field] = {"value": figure["value"], "assumption": carried}
    missing = set(spec.scale) - set(derived)
    if missing:
        raise ProfileError(f"projected chip {key!r} scales {sorted(missing)}, which {spec.derive_from} does not have")
    return derived


def _override(chips: dict[str, dict[str, Any]], overrides: Mapping[str, float]) -> None:
    for dotted, value in overrides.items():
        chip, _, field = dotted.partition(".")
        if chip not in chips or field not in ChipSpec.model_fields or field in {"key", "name", "projected"}:
            raise ProfileError(
                f"override {dotted!r}: expected CHIP.FIELD with CHIP in {sorted(chips)} "
                f"and FIELD one of the figures, e.g. trn3.usd_per_chip_hour"
            )
        chips[chip][field] = {"value": float(value), "assumption": f"overridden by configuration ({dotted})"}


def build_catalog(layers: Iterable[Mapping[str, Any]], overrides: Mapping[str, float] | None = None) -> ProfileCatalog:
    """Merge raw TOML layers (later wins), derive projected chips, apply overrides, validate."""
    merged: dict[str, Any] = {}
    for layer in layers:
        _merge(merged, layer)
    raw_chips: dict[str, Any] = merged.get("chips", {})
    chips_raw = {key: dict(raw) for key, raw in raw_chips.items() if "derive_from" not in raw}
    for key, raw in raw_chips.items():
        if "derive_from" in raw:
            chips_raw[key] = _derive(key, raw, raw_chips)
    _override(chips_raw, overrides or {})
    try:
        sources = {key: Source.model_validate(raw) for key, raw in merged.get("sources", {}).items()}
        chips = {key: ChipSpec.model_validate({"key": key, **raw}) for key, raw in chips_raw.items()}
        systems = {key: SystemSpec.model_validate(raw) for key, raw in merged.get("systems", {}).items()}
    except ValidationError as error:
        raise ProfileError(f"invalid device profile data: {error}") from error
    return ProfileCatalog(sources, chips, systems)


def builtin_layers() -> list[dict[str, Any]]:
    """The TOML files shipped in ``agentcore.accel.profiles``."""
    folder = resources.files("agentcore.accel.profiles")
    return [
        parse_toml(entry.read_text(encoding="utf-8"), f"agentcore.accel.profiles/{entry.name}")
        for entry in sorted(folder.iterdir(), key=lambda item: item.name)
        if entry.name.endswith(".toml")
    ]


def user_layers(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """User profile files (or folders of ``*.toml``) in the same schema as the built-in data."""
    layers: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(path.glob("*.toml")) if path.is_dir() else [path]
        if not files or not all(file.is_file() for file in files):
            raise ProfileError(f"profile path {path} is not a TOML file or a folder holding *.toml files")
        layers.extend(read_toml(file) for file in files)
        log.info("loaded user device profiles from %s", path)
    return layers


def load_catalog(paths: Iterable[Path] = (), overrides: Mapping[str, float] | None = None) -> ProfileCatalog:
    """Built-in profiles plus the user's files, with figure overrides (``{"trn3.usd_per_chip_hour": 4.1}``)."""
    return build_catalog([*builtin_layers(), *user_layers(paths)], overrides)
