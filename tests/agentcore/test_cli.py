"""The agentcore command line: help, version, and the models group against a private cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentcore import __version__
from agentcore.cli import app

runner = CliRunner()


def test_help_and_version() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "models" in result.output
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


@pytest.mark.parametrize("command", [["models", "--help"], ["models", "build", "--help"], ["demo", "--help"]])
def test_every_command_has_help(command: list[str]) -> None:
    assert runner.invoke(app, command).exit_code == 0


def test_models_build_list_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_source: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AGENTCORE_CACHE_DIR", str(tmp_path))
    assert runner.invoke(app, ["models", "verify"]).exit_code == 1  # nothing built yet
    build = runner.invoke(app, ["models", "build", "--model-dir", str(model_source)])
    assert build.exit_code == 0, build.output
    assert re.search(r"model\.int8\.onnx: [\d.]+ MiB", build.output)  # what was built, in bytes
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]  # onnxruntime's advice is muted
    listing = runner.invoke(app, ["models", "list"])
    assert listing.exit_code == 0 and "384" in listing.output
    assert runner.invoke(app, ["models", "verify"]).exit_code == 0
    onnx_file = next(tmp_path.glob("models/*/model.int8.onnx"))
    onnx_file.write_bytes(onnx_file.read_bytes()[:-10])
    result = runner.invoke(app, ["models", "verify"])
    assert result.exit_code == 1 and "model.int8.onnx" in result.output
    assert runner.invoke(app, ["models", "build", "--model-dir", str(model_source)]).exit_code == 0
    assert runner.invoke(app, ["models", "verify"]).exit_code == 0


def test_bad_model_dir_exits_nonzero_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTCORE_CACHE_DIR", str(tmp_path))
    result = runner.invoke(app, ["models", "build", "--model-dir", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "does not exist" in result.stderr


def _command_paths(command: object, path: list[str]) -> list[list[str]]:
    paths = [path]
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():  # type: ignore[attr-defined]
            paths += _command_paths(sub, [*path, name])
    return paths


def test_every_command_in_the_tree_answers_help() -> None:
    import typer

    paths = _command_paths(typer.main.get_command(app), [])
    assert len(paths) > 20
    for path in paths:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)


def test_cli_reference_page_matches_the_code() -> None:
    from agentcore.cli.reference import render

    page = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    assert page.read_text() == render(app), "regenerate: python -m agentcore.cli.reference > docs/cli.md"


def test_errors_keep_bracketed_text_and_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    import typer

    from agentcore.cli.output import fail

    with pytest.raises(typer.Exit) as stopped:
        fail("agentcore.toml [accel]: profile [bold] is unknown", 2)
    assert stopped.value.exit_code == 2
    assert "error: agentcore.toml [accel]: profile [bold] is unknown" in capsys.readouterr().err
