"""Validation errors in test files and request JSON point at the offending line, like the policy errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.policies.errors import PolicyRequestError
from agentcore.policies.testing import load_tests

TESTS = """[entities.order."#W1"]
owner = "ava"

[[case]]
name = "fine"
action = "refund"
expect = "allow"

[[case]]
name = "broken"
action = "refund"
expect = "maybe"
bogus = 1
"""


def test_a_bad_case_is_reported_at_its_lines_without_pydantic_noise(tmp_path: Path) -> None:
    path = tmp_path / "a.tests.toml"
    path.write_text(TESTS)
    with pytest.raises(PolicyRequestError) as raised:
        load_tests(path)
    message = str(raised.value)
    assert f"{path}:12: case[1].expect: Input should be 'allow', 'deny' or 'needs_approval' (got 'maybe')" in message
    assert f"{path}:13: case[1].bogus: Extra inputs are not permitted" in message
    assert "errors.pydantic.dev" not in message and "type=" not in message


def test_a_bad_request_file_is_reported_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "p.policy").write_text("allow refund.\n")
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"principal": {"id": "ava"}, "action": "refund", "args": {}, "extra": 1}, indent=1))
    result = CliRunner().invoke(app, ["policy", "explain", str(tmp_path / "p.policy"), "--request", str(request)])
    assert result.exit_code == 2
    assert f"{request}:7: extra: Extra inputs are not permitted" in result.stderr
    assert "errors.pydantic.dev" not in result.stderr
