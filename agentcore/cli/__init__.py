"""The ``agentcore`` command line: one typer app, one sub-app per part of the library."""

from __future__ import annotations

import logging

import typer

from agentcore import __version__
from agentcore.cli import console, demo, erasure, init
from agentcore.cli.accel import app as accel_app
from agentcore.cli.eval import app as eval_app
from agentcore.cli.gateway import app as gateway_app
from agentcore.cli.memory import app as memory_app
from agentcore.cli.models import app as models_app
from agentcore.cli.policy import app as policy_app

app = typer.Typer(
    name="agentcore",
    help="Govern AI agents: policies, gateway, memory, evaluations, simulated Trainium accelerators.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(models_app, name="models")
app.add_typer(eval_app, name="eval")
app.add_typer(memory_app, name="memory")
app.add_typer(accel_app, name="accel")
app.add_typer(policy_app, name="policy")
app.add_typer(gateway_app, name="gateway")
demo.register(app)
console.register(app)
erasure.register(app)
init.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentcore {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress at INFO level."),
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


def main() -> None:
    app()
