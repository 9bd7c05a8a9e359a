"""Tests never write into the repository: the tests that used to (eval's CLI wrote ``.agentcore/`` into the working
directory, Hypothesis wrote ``.hypothesis/``) run from the clone's root in a child pytest and leave nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FORMER_WRITERS = [
    "tests/evaluations/test_suites_and_reports.py::test_cli_exit_codes_and_report_files",
    "tests/evaluations/test_pairwise.py::test_cli_compare_gates_and_exit_codes",
    "tests/gateway/test_canonical.py::test_dumps_writes_what_json_dumps_writes",
]


def _untracked() -> set[str]:
    """Untracked and ignored entries as git reports them (a new folder is one entry, e.g. ``.hypothesis/``)."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=REPO, capture_output=True, text=True, check=True
    )
    return {line[3:] for line in status.stdout.splitlines() if line[:2] in ("??", "!!")}


@pytest.mark.slow
def test_former_writers_leave_the_repository_as_it_was() -> None:
    before = _untracked()
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FORMER_WRITERS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env={key: value for key, value in os.environ.items() if key != "AGENTCORE_DATABASE_URL"},
    )
    assert child.returncode == 0, child.stdout[-4000:]
    assert sorted(_untracked() - before) == []
