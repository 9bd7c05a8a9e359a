"""``agentcore init`` writes a starter folder that the policy commands accept as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app

runner = CliRunner()


def test_init_writes_a_bundle_that_checks_and_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "--json"])
    assert result.exit_code == 0, result.output
    written = json.loads(result.output)["written"]
    assert sorted(written) == ["agentcore.toml", "policies/starter.policy", "policies/starter.tests.toml", "tools.json"]
    for command in (
        ["policy", "check", "policies/", "--tools", "tools.json", "--strict"],
        ["policy", "test", "policies/"],
        ["policy", "fmt", "--check", "policies/"],
        ["policy", "export", "policies/", "--cedar"],
    ):
        checked = runner.invoke(app, command)
        assert checked.exit_code == 0, (command, checked.output)
    assert "4 passed, 0 failed" in runner.invoke(app, ["policy", "test", "policies/"]).output


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    target = tmp_path / "project"
    assert runner.invoke(app, ["init", str(target)]).exit_code == 0
    (target / "tools.json").write_text("[]")
    again = runner.invoke(app, ["init", str(target)])
    assert again.exit_code == 2 and "already exist" in again.stderr and "--force" in again.stderr
    assert (target / "tools.json").read_text() == "[]"
    assert runner.invoke(app, ["init", str(target), "--force"]).exit_code == 0
    assert "refund" in (target / "tools.json").read_text()
