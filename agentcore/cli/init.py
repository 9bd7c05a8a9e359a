"""``agentcore init``: a folder that every other command works in, for a first try or a new project."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agentcore.cli.output import fail
from agentcore.errors import AgentCoreError

NEXT_STEPS = (
    "agentcore policy check policies/ --tools tools.json --strict",
    "agentcore policy test policies/",
)


def init(
    folder: Path = typer.Argument(Path("."), help="Folder to initialise (created if absent)."),
    force: bool = typer.Option(False, "--force", help="Overwrite starter files that already exist."),
    as_json: bool = typer.Option(False, "--json", help="Print the written files as one JSON object."),
) -> None:
    """Write policies/ (a starter bundle and its tests), tools.json and agentcore.toml into FOLDER."""
    from agentcore.starter import scaffold

    try:
        written = scaffold(folder, force=force)
    except (AgentCoreError, OSError) as error:
        fail(error, 2)
    if as_json:
        typer.echo(json.dumps({"written": [str(path) for path in written], "next": list(NEXT_STEPS)}))
        return
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo("next:")
    for command in NEXT_STEPS:
        typer.echo(f"  {command}")


def register(app: typer.Typer) -> None:
    app.command("init")(init)
