"""The Strands integration tests, run in their own environment: strands-agents needs mcp<2.2, .venv has mcp>=2.3.

``make test`` builds .venv-strands (``make strands-env``, stamped on pyproject.toml); a local run without it skips
with the command to run, and under CI=true this test builds it, so the Strands tests never silently vanish.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
VENV = REPO / ".venv-strands"
STAMP, PYPROJECT = VENV / ".installed", REPO / "pyproject.toml"
SUITE = "tests/gateway/integrations/strands"


def built() -> bool:
    return STAMP.exists() and STAMP.stat().st_mtime >= PYPROJECT.stat().st_mtime


def test_the_strands_suite_passes_in_its_own_environment(in_ci: bool) -> None:
    if importlib.util.find_spec("strands") is not None:
        pytest.skip(f"strands-agents is installed here: {SUITE} runs in this session")
    if not built():
        if not in_ci:
            pytest.skip(f"{VENV.name} is missing or older than pyproject.toml: run `make strands-env` (make test does)")
        subprocess.run(["make", "--no-print-directory", "strands-env"], cwd=REPO, check=True, timeout=1800)
    run = subprocess.run(
        [str(VENV / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", SUITE],
        cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert re.fullmatch(r"\d+ passed(, \d+ warnings?)? in .+", summary), summary  # none skipped or deselected
