"""The demo's policy bundle passes ``agentcore policy check`` against the 16 tool schemas, and its own tests."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.demo.governance import policy_dir


def test_bundle_checks_clean_against_the_tool_schemas() -> None:
    """One warning by design: `cancel-reason` repeats the schema's enum for hosts that skip schema validation."""
    tools = Path(str(resources.files("agentcore.demo").joinpath("data/tools.json")))
    result = CliRunner().invoke(app, ["policy", "check", str(policy_dir()), "--tools", str(tools), "--json"])
    assert result.exit_code == 0, result.output
    findings = [json.loads(line) for line in result.output.splitlines() if line.strip()]
    assert [(f["severity"], f["code"], f["rule_id"]) for f in findings] == [
        ("warning", "excluded-by-schema", "cancel-reason")
    ]


def test_bundle_policy_tests_pass(tmp_path: Path) -> None:
    junit = tmp_path / "policy-tests.xml"
    result = CliRunner().invoke(app, ["policy", "test", str(policy_dir()), "--junit", str(junit)])
    assert result.exit_code == 0, result.output
    assert "27 passed, 0 failed" in result.output and junit.stat().st_size > 0
