"""The whole command tree follows one set of conventions: ``--json`` where a command prints data, exit codes
0 ok / 1 check failed / 2 usage or input error, help that keeps its text and names its values readably."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agentcore import Accelerator
from agentcore.accel.errors import ProfileError
from agentcore.cli import app

runner = CliRunner()

# Commands that act rather than print data; each says where its output goes instead.
NO_JSON = {
    "console": "a web server",
    "demo": "writes its report folder (report.json, index.html)",
    "forget": "an erasure; prints one confirmation line",
    "gateway approvals approve": "a decision; prints one confirmation line",
    "gateway approvals reject": "a decision; prints one confirmation line",
    "gateway audit export": "prints JSON lines already",
    "gateway audit prune": "a maintenance action; prints one line",
    "gateway serve": "a server",
    "memory forget": "an erasure; prints one confirmation line",
    "memory purge": "a maintenance action; prints one line",
    "models build": "builds files; prints their folder",
    "models verify": "a check: its exit code is the answer",
    "policy export": "prints Cedar text (or writes --output)",
    "policy fmt": "rewrites files; --check is a check",
}


def _leaves(command: Any, path: tuple[str, ...] = ()) -> dict[str, Any]:
    if hasattr(command, "commands"):
        found: dict[str, Any] = {}
        for name, sub in command.commands.items():
            found |= _leaves(sub, (*path, name))
        return found
    return {" ".join(path): command}


LEAVES = _leaves(typer.main.get_command(app))


def _options(command: Any) -> dict[str, Any]:
    return {name: param for param in command.params for name in getattr(param, "opts", [])}


def test_every_command_that_prints_data_takes_json() -> None:
    assert len(LEAVES) > 25
    missing = [path for path, command in LEAVES.items() if path not in NO_JSON and "--json" not in _options(command)]
    assert missing == []
    for path in NO_JSON:
        assert path in LEAVES, f"{path} is exempt but no longer exists"


def test_json_is_a_flag_everywhere() -> None:
    for path, command in LEAVES.items():
        option = _options(command).get("--json")
        assert option is None or option.is_flag, f"{path}: --json takes a value; name the file option --report"


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_help_keeps_brackets_and_names_values_readably(path: str) -> None:
    result = runner.invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    placeholder = re.search(r"<[a-z][\w\[\], ]*>|\{[A-Z_]+\}", result.output)  # <list[Path]>, {PATHS}
    assert placeholder is None, f"{path}: a type placeholder in its help:\n{result.output}"
    usage = result.output.split("\n\n", 1)[0]
    for metavar in re.findall(r"\[?([A-Z][A-Z_]*)\]?(?:\.\.\.)?", usage.split("[OPTIONS]", 1)[-1]):
        assert metavar in {p.metavar for p in LEAVES[path].params}, f"{path}: {metavar} is not an argument's name"
    for param in LEAVES[path].params:
        for bracketed in re.findall(r"\[\w+\]", getattr(param, "help", None) or ""):
            assert bracketed in result.output, f"{path}: {bracketed} of the help text was swallowed"


def test_a_bracketed_config_section_survives_in_help() -> None:
    result = runner.invoke(app, ["eval", "run", "--help"], env={"COLUMNS": "200"})
    assert re.search(r"\[accel\]\s+backend", result.output) and "--report PATH" in result.output


def test_usage_and_input_errors_exit_2_and_failed_checks_exit_1(tmp_path: Path) -> None:
    assert runner.invoke(app, ["accel", "profiles", "--no-such-option"]).exit_code == 2
    unknown = runner.invoke(app, ["accel", "compare", "trn2-ultraserver", "trn3-ultrasrver-gen2"])
    assert unknown.exit_code == 2 and "did you mean 'trn3-ultraserver-gen2'?" in unknown.stderr
    workload = runner.invoke(app, ["accel", "simulate", "--profile", "trn2", "--workload", "no-such-workload"])
    assert workload.exit_code == 2, workload.output
    assert runner.invoke(app, ["accel", "profiles", "--cite", "trn9"]).exit_code == 2
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.policy").write_text("deny refund when amount is more than 5.\nallow refund.\n")
    assert runner.invoke(app, ["policy", "check", str(tmp_path / "p"), "--strict"]).exit_code in (0, 1)
    (tmp_path / "p" / "a.policy").write_text("allow refund when.\n")
    assert runner.invoke(app, ["policy", "check", str(tmp_path / "p")]).exit_code == 2


def test_accelerator_rejects_an_unknown_device_when_built() -> None:
    with pytest.raises(ProfileError, match="did you mean 'trn3-ultraserver-gen2'"):
        Accelerator(device="trn3-ultraserver-gen3", ledger=None)


def test_id_columns_are_never_cut_at_80_columns() -> None:
    result = runner.invoke(app, ["accel", "profiles"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "trn3-ultraserver-gen1" in result.output and "trn3-ultraserver-gen2" in result.output
    assert "…" not in result.output
    models = runner.invoke(app, ["models", "list"], env={"COLUMNS": "80"})
    assert models.exit_code == 0 and "…" not in models.output


def test_a_missing_policy_path_says_what_to_do_without_a_line_zero(tmp_path: Path) -> None:
    for args in (["policy", "check", str(tmp_path / "nope")], ["policy", "test", str(tmp_path / "nope")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "policy path" in result.stderr, result.output
        assert ":0:0" not in result.stderr and "agentcore init" in result.stderr
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(app, ["policy", "check", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and f"{tmp_path / 'empty'}: no *.policy files found" in empty.stderr


@pytest.mark.parametrize(
    "command", [["memory", "stats"], ["accel", "ledger"], ["gateway", "audit", "verify"], ["gateway", "status"]]
)
def test_a_mistyped_database_path_exits_2_and_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    """`memory stats` and `accel ledger` created an empty database there and printed its zeros, exit 0."""
    missing = tmp_path / "typo" / "agentcore.db"
    result = runner.invoke(app, [*command, "--database", str(missing)])
    assert result.exit_code == 2 and f"no database at {missing}" in result.stderr, result.output
    assert not (tmp_path / "typo").exists()


def test_an_unreachable_database_server_exits_2_with_the_reason_not_a_traceback() -> None:
    """A refused connection was a traceback that exited 1, which `audit verify` means as "the chain is broken"."""
    pytest.importorskip("psycopg2")
    result = runner.invoke(app, ["gateway", "audit", "verify", "--database", "postgresql://u:pw@127.0.0.1:1/x"])
    assert result.exit_code == 2, result.output
    assert "cannot connect to the gateway database" in result.stderr and "pw" not in result.stderr


def test_errors_show_the_names_they_quote_escaped(tmp_path: Path, shown_safely: Callable[..., None]) -> None:
    """An error quotes a path or a name it was given: the escape in it reached the terminal on stderr."""
    missing = tmp_path / "\x1b]8;;evil\x07x[/]\nforged \u202eevil"
    result = runner.invoke(app, ["policy", "check", str(missing)])
    assert result.exit_code == 2 and result.stderr.startswith("error: "), result.output
    shown_safely(result.stderr, str(missing))


def test_every_character_prints_on_an_ascii_stdout(tmp_path: Path) -> None:
    """A name in German or Greek stopped `memory events` with a UnicodeEncodeError on an ASCII stdout
    (``PYTHONIOENCODING=ascii``); now it prints as backslash escapes (``--json`` is ASCII JSON anyway)."""
    from agentcore.memory import MemoryStore

    url = f"sqlite:///{tmp_path / 'm.db'}"
    with MemoryStore(url) as store:
        store.add_event("alice", "s1", "user", "Grüße τ")
    command = ["-c", "from agentcore.cli import main; main()", "memory", "events", "alice", "s1", "--db", url]
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "120"}
    done = subprocess.run([sys.executable, *command], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert "Gr\\xfc\\xdfe \\u03c4" in done.stdout.decode("ascii")
