"""The LLM catalogue: shipped architectures with sources, derived counts, user files, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore.accel.errors import ProfileError
from agentcore.accel.serving.catalogue import load_llms
from agentcore.accel.sim.profiles import load_catalog


@pytest.mark.parametrize(
    ("key", "billions"),
    [("llama-3.1-8b", 8.03), ("llama-3.1-70b", 70.6), ("llama-3.1-405b", 405.9), ("mistral-7b", 7.25),
     ("qwen3-32b", 32.8), ("gpt-oss-120b", 116.8)],
)  # fmt: skip
def test_parameter_counts_derived_from_the_architecture_match_the_model_cards(key: str, billions: float) -> None:
    model = load_llms().model(key)
    assert model.total_params / 1e9 == pytest.approx(billions, rel=0.02)
    assert model.source in load_llms().sources


def test_moe_active_parameters_and_kv_bytes() -> None:
    llms = load_llms()
    oss = llms.model("gpt-oss-120b")
    assert oss.moe and oss.active_params / 1e9 == pytest.approx(5.1, rel=0.05)  # OpenAI: 5.1B active
    llama = llms.model("llama-3.1-70b")
    assert llama.kv_bytes_per_token(2.0) == 2 * 80 * 8 * 128 * 2  # 320 KiB per token at BF16


def test_gpu_profiles_share_the_trainium_schema_with_sources() -> None:
    catalog = load_catalog()
    for key in ("h100", "h200", "b200"):
        chip = catalog.chips[key]
        assert chip.bf16_tflops.value > 900 and chip.scaleup_chips is not None
        assert all(figure.source in catalog.sources for figure in chip.figures().values() if figure.source)
    assert catalog.profile("p5.48xlarge").chips == 8
    with pytest.raises(ProfileError, match="supports fp32, bf16, fp8"):
        catalog.chips["h100"].tflops("fp4")


def test_users_add_their_own_models(tmp_path: Path) -> None:
    extra = tmp_path / "mine.toml"
    extra.write_text(
        '[sources.me]\nurl = "https://example.org/config.json"\nkind = "my config"\n'
        '[models.tiny]\nname = "Tiny"\nsource = "me"\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\n'
        "head_dim = 16\nffn = 128\nvocab = 1000\n"
    )
    llms = load_llms([extra])
    assert llms.model("tiny").layers == 2 and "llama-3.1-70b" in llms.models


def test_bad_catalogue_entries_are_explained(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[models.odd]\nname = "Odd"\nsource = "hf-llama-3.1-8b"\nlayers = 2\nhidden = 64\nheads = 5\n'
        "kv_heads = 2\nhead_dim = 16\nffn = 128\nvocab = 1000\n"
    )
    with pytest.raises(ProfileError, match="multiple of kv_heads"):
        load_llms([bad])
    with pytest.raises(ProfileError, match="unknown LLM 'nope'; known: gpt-oss-120b"):
        load_llms().model("nope")
    with pytest.raises(ProfileError, match="not a TOML file"):
        load_llms([tmp_path / "missing.toml"])
