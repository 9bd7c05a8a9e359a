"""`agentcore policy ...` commands: output and exit codes CI gates on."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from agentcore.cli import app
from agentcore.demo.governance import policy_dir

RUNNER = CliRunner()
RETAIL = policy_dir()  # the packaged retail bundle and its tests
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "refunds.issue",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number", "minimum": 0},
                    "reason": {"type": "string", "enum": ["damaged", "late"]},
                },
            },
        },
    }
]


def run(*args: str) -> tuple[int, str]:
    result = RUNNER.invoke(app, ["policy", *args])
    return result.exit_code, result.output


def write(tmp_path: Path, text: str, name: str = "p.policy") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_help_for_every_command() -> None:
    for command in ("check", "explain", "fmt", "test", "export"):
        code, output = run(command, "--help")
        assert code == 0 and "Usage" in output


def test_check_exit_codes(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    assert (
        run("check", str(write(tmp_path, "allow refunds.issue when amount is at most 5.")), "--tools", str(tools))[0]
        == 0
    )
    code, output = run(
        "check", str(write(tmp_path, "allow refunds.isue when amont is at most 5.")), "--tools", str(tools)
    )
    assert code == 1 and "did you mean `refunds.issue`?" in output and "unknown-tool" in output
    code, output = run("check", str(write(tmp_path, "allow any tool.")), "--strict")
    assert code == 1 and "allows-everything" in output
    code, output = run("check", str(write(tmp_path, "alow x.")))
    assert code == 2 and "did you mean `allow`?" in output


def test_explain_shows_rules_and_conditions(tmp_path: Path) -> None:
    policy = write(tmp_path, "allow refunds.issue when amount is at most 500.\nmonitor deny refunds.issue.")
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"principal": {"id": "alice"}, "action": "refunds.issue", "args": {"amount": 20}}))
    code, output = run("explain", str(policy), "--request", str(request))
    assert code == 0 and "effect: allow" in output and "amount is at most 500 -> true" in output
    assert "would be, with monitored rules enforced: deny" in output
    request.write_text("{}")
    assert run("explain", str(policy), "--request", str(request))[0] == 2


def test_fmt_check_and_write(tmp_path: Path) -> None:
    path = write(tmp_path, "deny   x when a exceeds 1 .\n")
    assert run("fmt", str(tmp_path), "--check")[0] == 1
    assert run("fmt", str(tmp_path))[0] == 0
    assert path.read_text() == "deny x when a is more than 1.\n"
    assert run("fmt", str(tmp_path), "--check")[0] == 0
    assert run("fmt", str(tmp_path), "--check", "--width", "24")[0] == 1
    assert run("fmt", str(tmp_path), "--width", "24")[0] == 0
    assert path.read_text() == "deny x\n    when a is more than 1.\n"
    assert run("fmt", str(tmp_path), "--width", "5")[0] == 2  # below the minimum width


def test_shipped_bundles_pass_fmt_check() -> None:
    root = Path(__file__).resolve().parents[2]
    paths = [root / "agentcore" / "demo" / "policies", root / "examples", root / "tests" / "policies" / "data"]
    assert run("fmt", "--check", *map(str, paths)) == (0, "")


def test_policy_tests_and_junit(tmp_path: Path) -> None:
    junit = tmp_path / "out.xml"
    code, output = run("test", str(RETAIL), "--junit", str(junit))
    assert code == 0 and "27 passed, 0 failed" in output
    assert ET.parse(junit).getroot().get("tests") == "27"
    failing = tmp_path / "bad.tests.toml"
    failing.write_text('[[case]]\nname = "wrong"\naction = "think"\nexpect = "deny"\n')
    code, output = run("test", str(RETAIL), "--tests", str(failing), "--junit", str(junit))
    assert code == 1 and "expected deny, got allow" in output
    assert ET.parse(junit).getroot().get("failures") == "1"
    broken = tmp_path / "broken.tests.toml"
    broken.write_text('[[case]]\nname = "x"\nexpect = "maybe"\n')
    assert run("test", str(RETAIL), "--tests", str(broken))[0] == 2


def test_export_cedar(tmp_path: Path) -> None:
    policy = write(
        tmp_path, 'allow a when n is at most 3.5.\nallow a when s matches "x".\ndeny b when tags contains "x".'
    )
    out = tmp_path / "out.cedar"
    result = RUNNER.invoke(app, ["policy", "export", str(policy), "--cedar", "-o", str(out)])
    assert result.exit_code == 0 and "p.policy:2: left out [p.policy#2] (so Cedar allows less)" in result.output
    assert 'permit(principal, action == Action::"a", resource)' in out.read_text()
    assert 'lessThanOrEqual(decimal("3.5"))' in out.read_text() and out.read_text().count("forbid(") == 2
    assert RUNNER.invoke(app, ["policy", "export", str(policy), "--cedar", "--strict"]).exit_code == 1
    assert run("export", str(policy))[0] == 2


def test_export_cedar_refuses_rather_than_fail_open(tmp_path: Path) -> None:
    """A deny rule Cedar cannot express used to be dropped with exit 0, leaving a Cedar set that allowed it."""
    policy = write(tmp_path, 'allow a.\ndeny a when s matches "x".\nlimit a to 1 call per hour per user.')
    out = tmp_path / "out.cedar"
    result = RUNNER.invoke(app, ["policy", "export", str(policy), "--cedar", "-o", str(out)])
    assert result.exit_code == 1 and not out.exists()
    assert f"{policy}:2:1: cannot export rule `p.policy#2` to Cedar: Cedar has no regular expressions" in result.output
    assert f"{policy}:3:1: cannot export rule `p.policy#3`" in result.output and "nothing was written" in result.output


def test_export_cedar_lossy_is_opt_in_and_lists_each_loss(tmp_path: Path) -> None:
    """`--lossy` writes what Cedar can express even when a deny has no Cedar form, and says so in the text."""
    policy = write(tmp_path, 'allow a.\ndeny a when s matches "x".\ndeny a when n is more than 5.')
    out = tmp_path / "out.cedar"
    result = RUNNER.invoke(app, ["policy", "export", str(policy), "--cedar", "--lossy", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"{policy}:2: left out [p.policy#2] (LOSSY: so Cedar allows more): Cedar has no regular" in result.output
    text = out.read_text()
    assert text.startswith(f"// LOSSY (Cedar allows more): {policy}:2: left out [p.policy#2]: Cedar has no regular")
    assert text.count("forbid(") == 2 and "p.policy#3" in text
    assert RUNNER.invoke(app, ["policy", "export", str(policy), "--cedar", "--lossy", "--strict"]).exit_code == 1


def test_names_from_tests_and_tool_schemas_are_shown_escaped(
    tmp_path: Path, hostile_text: tuple[str, ...], shown_safely: Callable[..., None]
) -> None:
    """A failing case prints its name, and `check` suggests tool names from a schema file (an MCP server's list):
    a newline in one forged a line of the report, and escapes and a bidi override reached the terminal."""
    policy = write(tmp_path, "allow refunds.issue.\n")
    cases = tmp_path / "hostile.tests.toml"
    cases.write_text("".join(f'[[case]]\nname = {json.dumps(text)}\naction = "think"\nexpect = "allow"\n'
                             for text in hostile_text))  # fmt: skip
    code, output = run("test", str(policy), "--tests", str(cases))
    assert code == 1 and output.count("\n") == len(hostile_text) + 1, output
    shown_safely(output, *(f":: {text}: expected allow" for text in hostile_text))
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "refunds.issue\u202e\n", "inputSchema": {}}]))
    code, output = run("check", str(policy), "--tools", str(tools))
    assert code == 1 and "did you mean" in output, output
    shown_safely(output, "refunds.issue\u202e\n")
