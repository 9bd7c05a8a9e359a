"""``agentcore console``: serve the local web console (approvals inbox, audit explorer, evaluation runs, spend)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import typer

from agentcore.cli.output import fail
from agentcore.errors import AgentCoreError

_CONSOLE_EXTRA = frozenset({"starlette", "jinja2", "uvicorn", "multipart", "python_multipart", "jwt", "markupsafe"})


def register(app: typer.Typer) -> None:
    app.command("console")(console)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def console(
    config: Path = typer.Option(
        ...,
        "--config",
        "-c",
        help="The gateway's gateway.toml: its database, audit keys, anchors and JWT settings (gateway.auth).",
    ),
    reports: Path | None = typer.Option(
        None, "--reports", help="Folder of JSON reports from `agentcore eval run --report`."
    ),
    ledger: str | None = typer.Option(None, "--ledger", help="Accel ledger database URL (default: the gateway's)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (loopback unless --allow-remote)."),
    port: int = typer.Option(8780, "--port", help="HTTP port."),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="Permit a non-loopback --host (put TLS in front of it)."
    ),
) -> None:
    """Serve the web console on http://HOST:PORT (exit 2 on a bad config or a missing console extra)."""
    if not _loopback(host) and not allow_remote:
        fail(f"--host {host} is not a loopback address; the console binds to loopback unless --allow-remote", 2)
    try:
        import uvicorn

        from agentcore.console import ConsoleSettings, create_app
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in _CONSOLE_EXTRA:
            raise
        fail(f"`agentcore console` needs the console extra (missing {error.name}): "
             "pip install 'agentcore-governance[console]'", 2)  # fmt: skip
    try:
        settings = ConsoleSettings.from_gateway_config(config, reports=reports, ledger=ledger)
        application = create_app(settings)
    except AgentCoreError as error:
        fail(error, 2)
    uvicorn.run(application, host=host, port=port, log_level="warning")
