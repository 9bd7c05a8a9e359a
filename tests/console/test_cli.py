"""``agentcore console`` refuses what it cannot serve safely, with exit code 2 and the reason."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from agentcore.cli import app

from .conftest import _write_config


def test_a_non_loopback_host_needs_allow_remote(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["console", "--config", str(_write_config(tmp_path)), "--host", "0.0.0.0"])
    assert done.exit_code == 2 and "loopback" in done.output


def test_a_gateway_config_without_auth_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(f'[gateway]\ndatabase = "{tmp_path / "gw.db"}"\n')
    done = CliRunner().invoke(app, ["console", "--config", str(config)])
    assert done.exit_code == 2 and "[gateway.auth]" in done.output


def test_a_missing_jwt_secret_is_named(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app, ["console", "--config", str(_write_config(tmp_path))], env={"CONSOLE_TEST_SECRET": ""}
    )
    assert done.exit_code == 2 and "CONSOLE_TEST_SECRET" in done.output
