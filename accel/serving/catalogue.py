"""The LLM catalogue and the serving model's named efficiency parameters, read from TOML data.

Architectures come from the models' published ``config.json`` (``accel/profiles/llms.toml`` cites each);
users add models, efficiencies or published reference points in the same schema. Parameter counts, FLOPs
per token and KV-cache bytes are derived from the architecture, never typed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentcore.accel.errors import ProfileError
from agentcore.accel.sim.profiles import Figure, Source
from agentcore.accel.sim.tomlread import parse_toml, read_toml

LLM_FILE = "llms.toml"


class Architecture(BaseModel):
    """A decoder-only transformer (SwiGLU MLP, grouped-query attention, optional MoE and sliding window)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    name: str
    source: str
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    ffn: int = Field(ge=1, description="SwiGLU intermediate size (one expert's for MoE)")
    vocab: int = Field(ge=1)
    experts: int = Field(default=0, ge=0)
    active_experts: int = Field(default=0, ge=0)
    tied_embeddings: bool = False
    sliding_window: int = Field(default=0, ge=0)
    sliding_layers: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> Architecture:
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.key}: heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if bool(self.experts) != bool(self.active_experts) or self.active_experts > self.experts:
            raise ValueError(f"{self.key}: give both experts and active_experts (active <= experts), or neither")
        if self.sliding_layers > self.layers or bool(self.sliding_layers) != bool(self.sliding_window):
            raise ValueError(f"{self.key}: sliding_layers (<= layers) and sliding_window go together")
        return self

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def attention_params(self) -> int:
        """Q, K, V and output projections of one layer."""
        q = self.heads * self.head_dim
        return 2 * self.hidden * q + 2 * self.hidden * self.kv_heads * self.head_dim

    @property
    def expert_params(self) -> int:
        """One SwiGLU MLP (gate, up, down) = one expert for MoE models."""
        return 3 * self.hidden * self.ffn

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @property
    def layer_params(self) -> int:
        mlp = self.experts * self.expert_params + self.hidden * self.experts if self.moe else self.expert_params
        return self.attention_params + mlp

    @property
    def total_params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params + self.lm_head_params

    @property
    def active_params(self) -> int:
        """Weights one token multiplies by: attention, its routed experts and the LM head (not the lookup)."""
        mlp = self.active_experts * self.expert_params + self.hidden * self.experts if self.moe else self.expert_params
        return self.layers * (self.attention_params + mlp) + self.vocab * self.hidden

    @property
    def linear_flops_per_token(self) -> float:
        return 2.0 * self.active_params

    def kv_bytes_per_token(self, element_bytes: float) -> float:
        """K and V of every layer for one token."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * element_bytes

    @property
    def attention_flops_coefficient(self) -> float:
        """FLOPs per (query token x attended key) summed over full-attention layers: QK^T and AV, 2 each."""
        return 4.0 * self.heads * self.head_dim * (self.layers - self.sliding_layers)

    @property
    def window_flops_per_token(self) -> float:
        """Attention FLOPs of one token in the sliding-window layers (at most ``sliding_window`` keys)."""
        return 4.0 * self.heads * self.head_dim * self.sliding_layers * self.sliding_window


class Efficiency(BaseModel):
    """Named fractions of datasheet peaks; see ``[serving.defaults]`` in llms.toml for what each means."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute_efficiency: Figure
    memory_efficiency: Figure
    link_efficiency: Figure
    step_overhead_ms: Figure
    memory_fraction: Figure

    @model_validator(mode="after")
    def _fractions(self) -> Efficiency:
        for name in ("compute_efficiency", "memory_efficiency", "link_efficiency", "memory_fraction"):
            value = getattr(self, name).value
            if not 0 < value <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        return self


Metric = Literal["output_tps", "ttft_ms", "tpot_ms"]


class PublishedResult(BaseModel):
    """A public serving measurement the model is checked against (``fitted`` ones set a parameter)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    source: str
    device: str
    model: str
    precision: str
    tp: int = Field(ge=1)
    pp: int = Field(default=1, ge=1)
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    metric: Metric
    value: float = Field(gt=0)
    fitted: bool = False
    known_gap: str | None = Field(default=None, description="why the model misses this point by more than 25%")


class LLMCatalogue:
    """Models, per-chip efficiencies and published results; lookups fail with the known names."""

    def __init__(
        self,
        sources: Mapping[str, Source],
        models: Mapping[str, Architecture],
        defaults: Efficiency,
        per_chip: Mapping[str, Mapping[str, Figure]],
        published: Mapping[str, PublishedResult],
    ) -> None:
        self.sources, self.models, self.defaults = dict(sources), dict(models), defaults
        self.per_chip = {chip: dict(figures) for chip, figures in per_chip.items()}
        self.published = dict(published)
        for model in self.models.values():
            if model.source not in self.sources:
                raise ProfileError(f"model {model.key!r} cites unknown source {model.source!r}")
        for result in self.published.values():
            if result.source not in self.sources or result.model not in self.models:
                raise ProfileError(f"published result {result.key!r}: unknown source or model")

    def model(self, key: str) -> Architecture:
        found = self.models.get(key)
        if found is None:
            raise ProfileError(f"unknown LLM {key!r}; known: {', '.join(sorted(self.models))}")
        return found

    def efficiency(self, chip: str) -> Efficiency:
        """The defaults with ``chip``'s overrides applied."""
        return self.defaults.model_copy(update=self.per_chip.get(chip, {}))


def _figures(raw: Mapping[str, Any], where: str) -> dict[str, Figure]:
    try:
        return {name: Figure.model_validate(value) for name, value in raw.items()}
    except ValidationError as error:
        raise ProfileError(f"{where}: {error}") from error


def build_catalogue(layers: Iterable[Mapping[str, Any]]) -> LLMCatalogue:
    """Merge raw TOML layers (later wins per key) and validate them."""
    merged: dict[str, dict[str, Any]] = {"sources": {}, "models": {}, "published": {}, "chips": {}}
    defaults: dict[str, Any] = {}
    for layer in layers:
        for section in ("sources", "models", "published"):
            merged[section].update(layer.get(section, {}))
        serving = layer.get("serving", {})
        defaults.update(serving.get("defaults", {}))
        for chip, figures in serving.get("chips", {}).items():
            merged["chips"].setdefault(chip, {}).update(figures)
    try:
        sources = {key: Source.model_validate(raw) for key, raw in merged["sources"].items()}
        models = {key: Architecture.model_validate({"key": key, **raw}) for key, raw in merged["models"].items()}
        published = {
            key: PublishedResult.model_validate({"key": key, **raw}) for key, raw in merged["published"].items()
        }
        efficiency = Efficiency.model_validate(_figures(defaults, "[serving.defaults]"))
    except ValidationError as error:
        raise ProfileError(f"invalid LLM catalogue data: {error}") from error
    unknown = {name for figures in merged["chips"].values() for name in figures} - set(Efficiency.model_fields)
    if unknown:
        raise ProfileError(f"[serving.chips.*] sets unknown parameters {sorted(unknown)}")
    per_chip = {chip: _figures(raw, f"[serving.chips.{chip}]") for chip, raw in merged["chips"].items()}
    return LLMCatalogue(sources, models, efficiency, per_chip, published)


def load_llms(paths: Iterable[Path] = ()) -> LLMCatalogue:
    """The shipped catalogue plus the user's TOML files (same schema; later files win)."""
    shipped = resources.files("agentcore.accel.profiles").joinpath(LLM_FILE).read_text(encoding="utf-8")
    layers = [parse_toml(shipped, f"agentcore.accel.profiles/{LLM_FILE}")]
    for path in paths:
        if not path.is_file():
            raise ProfileError(f"LLM catalogue {path} is not a TOML file")
        layers.append(read_toml(path))
    return build_catalogue(layers)
