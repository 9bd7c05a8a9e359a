"""The build cache: ONNX variants built from a model source, stored under a content-hash key, verified on load.

A build folder holds ``model.fp32.onnx``, ``model.int8.onnx``, the tokenizer and a ``manifest.json`` with
the sha256 of every file. A file whose hash does not match (a partial write, a flipped bit) is never
loaded: ``ensure_built`` rebuilds it, and ``verify`` reports it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import onnx
from pydantic import BaseModel

from agentcore.accel.models.bert import BertConfig, build_encoder_graph, load_weights
from agentcore.accel.models.quantize import quantize_int8
from agentcore.accel.models.source import (
    DEFAULT_MODEL_NAME,
    DEFAULT_WHEEL,
    ByteProgress,
    resolve_source,
    sha256_file,
)
from agentcore.accel.settings import cache_dir
from agentcore.errors import ModelCorruptError, ModelNotFoundError

log = logging.getLogger(__name__)

# Bump when the graph or quantisation changes: old builds then live under another key and are rebuilt.
BUILDER_VERSION = "1"
VARIANTS = ("fp32", "int8")
_SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json", "sentence_bert_config.json")
_build_lock = threading.Lock()
_hash_memo: dict[tuple[str, int, int], str] = {}


class BuiltModel(BaseModel):
    """A built encoder: where its files are and what they are."""

    name: str
    key: str
    folder: Path
    hidden_size: int
    max_tokens: int
    files: dict[str, str]  # file name -> sha256

    def path(self, variant: str) -> Path:
        if variant not in VARIANTS:
            raise ModelNotFoundError(f"unknown model variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        return self.folder / f"model.{variant}.onnx"

    @property
    def tokenizer_path(self) -> Path:
        return self.folder / "tokenizer.json"


def file_hash(path: Path) -> str:
    """sha256 of ``path``, memoised per (path, mtime, size) so a process hashes each file once."""
    stat = path.stat()
    memo_key = (str(path), stat.st_mtime_ns, stat.st_size)
    digest = _hash_memo.get(memo_key)
    if digest is None:
        digest = _hash_memo[memo_key] = sha256_file(path)
    return digest


def models_dir() -> Path:
    return cache_dir() / "models"


def build_key(source: Path) -> str:
    digest = hashlib.sha256(BUILDER_VERSION.encode())
    for name in _SOURCE_FILES:
        if (source / name).is_file():
            digest.update(name.encode() + file_hash(source / name).encode())
    return digest.hexdigest()[:16]


def _max_tokens(source: Path, config: BertConfig) -> int:
    """sentence-transformers' ``max_seq_length`` (256 for MiniLM) capped by the position table."""
    limit = 256
    sbert = source / "sentence_bert_config.json"
    if sbert.is_file():
        limit = int(json.loads(sbert.read_text()).get("max_seq_length", limit))
    return min(limit, config.max_position_embeddings)


def _atomic_write(target: Path, write: Callable[[Path], object]) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        write(Path(temp))
        os.chmod(temp, 0o644)  # mkstemp creates 0600; the cache is readable like any installed file
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _intact(folder: Path, files: dict[str, str]) -> list[str]:
    """Names of recorded files that are missing or whose hash differs."""
    return [
        name for name, digest in files.items() if not (folder / name).is_file() or file_hash(folder / name) != digest
    ]


def _read_manifest(folder: Path) -> BuiltModel | None:
    try:
        return BuiltModel.model_validate_json((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def ensure_built(
    model_dir: str | os.PathLike[str] | None = None, name: str | None = None, on_bytes: ByteProgress | None = None
) -> BuiltModel:
    """Return the built model for a source, building or repairing whatever is missing or corrupt;
    ``on_bytes(done, total)`` follows the source's download when there is one."""
    source = resolve_source(model_dir, on_bytes)
    with _build_lock:
        key = build_key(source)
        # The pinned default wheel is extracted to sources/<its sha256 prefix>, however it was chosen.
        label = name or (DEFAULT_MODEL_NAME if source.name == DEFAULT_WHEEL.sha256[:16] else source.name)
        folder = models_dir() / f"{label}-{key}"
        existing = _read_manifest(folder)
        if existing is not None:
            bad = _intact(folder, existing.files)
            if not bad:
                return existing
            log.warning("model build %s is corrupt (%s); rebuilding", folder, ", ".join(bad))
        return _build(source, folder, label, key)


def _build(source: Path, folder: Path, label: str, key: str) -> BuiltModel:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").unlink(missing_ok=True)
    config = BertConfig.from_folder(source)
    log.info("building ONNX encoder %s from %s", label, source)
    graph = build_encoder_graph(config, load_weights(source))
    fp32 = folder / "model.fp32.onnx"
    _atomic_write(fp32, lambda temp: onnx.save_model(graph, str(temp)))
    _atomic_write(folder / "model.int8.onnx", lambda temp: quantize_int8(fp32, temp))
    for extra in ("tokenizer.json", "config.json"):
        _atomic_write(folder / extra, partial(shutil.copyfile, source / extra))
    files = {
        name: file_hash(folder / name)
        for name in ("model.fp32.onnx", "model.int8.onnx", "tokenizer.json", "config.json")
    }
    built = BuiltModel(
        name=label,
        key=key,
        folder=folder,
        hidden_size=config.hidden_size,
        max_tokens=_max_tokens(source, config),
        files=files,
    )
    _atomic_write(folder / "manifest.json", lambda temp: temp.write_text(built.model_dump_json(indent=2)))
    return built


def list_built() -> list[BuiltModel]:
    """Every build in the cache that has a readable manifest."""
    root = models_dir()
    if not root.is_dir():
        return []
    found = (_read_manifest(folder) for folder in sorted(root.iterdir()) if folder.is_dir())
    return [model for model in found if model is not None]


def verify(model: BuiltModel) -> list[str]:
    """Names of the build's files that are missing or corrupt (empty when intact)."""
    return _intact(model.folder, model.files)


def load_verified(model: BuiltModel, variant: str) -> Path:
    """Path of a variant's ONNX file after checking its hash; raise with the fix when it is damaged."""
    path = model.path(variant)
    bad = _intact(model.folder, {path.name: model.files[path.name], "tokenizer.json": model.files["tokenizer.json"]})
    if bad:
        raise ModelCorruptError(
            f"{model.folder}: {', '.join(bad)} missing or corrupt (sha256 mismatch); "
            "run `agentcore models build` to rebuild it"
        )
    return path
