"""The ``agentcore`` command line: one typer app, one sub-app per part of the library."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import typer
from typer.core import TyperArgument, TyperCommand
from typer.models import ArgumentInfo, ParameterInfo

from agentcore import __version__
from agentcore.cli import console, demo, erasure, init
from agentcore.cli.accel import app as accel_app
from agentcore.cli.eval import app as eval_app
from agentcore.cli.gateway import app as gateway_app
from agentcore.cli.memory import app as memory_app
from agentcore.cli.models import app as models_app
from agentcore.cli.output import safe_streams
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


def _plain_help(typer_app: typer.Typer) -> None:
    """Help is printed as written (``[accel]`` in a help string is a config section, not rich markup) and every
    value shows a readable metavar (``PATH``, ``N``; an argument its own name) instead of ``<list[Path]>``."""
    typer_app.rich_markup_mode = None
    for command in typer_app.registered_commands:
        if command.callback is not None:
            _name_values(command.callback)
        if command.cls in (None, TyperCommand):
            command.cls = _PlainCommand
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _plain_help(group.typer_instance)


def _name_values(callback: Callable[..., Any]) -> None:
    hints = get_type_hints(callback)
    for name, parameter in inspect.signature(callback).parameters.items():
        info = parameter.default
        if not isinstance(info, ParameterInfo) or info.metavar is not None:
            continue
        if isinstance(info, ArgumentInfo):  # its own name; a list names one item (PATH, then "..." for more)
            many = get_origin(hints[name]) is list
            info.metavar = name.upper().removesuffix("S") if many else name.upper()
            continue
        kinds = set(get_args(hints[name])) or {hints[name]}
        for kind, metavar in _METAVARS:
            if kind in kinds or any(kind in get_args(option) for option in kinds):
                info.metavar = metavar
                break


_METAVARS = ((bool, None), (Path, "PATH"), (int, "N"), (float, "NUMBER"), (str, "TEXT"))


class _PlainArgument(TyperArgument):
    """An argument shown by its metavar alone (``PATH...``), as click does, not ``{PATHS}... <list[Path]>``."""

    def display_type_rich(self, ctx: Any) -> str | None:  # typer passes its vendored click Context
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return f"{name}..." if self.nargs != 1 else name

    def _rich_display_name(self) -> str:
        return f"{self.display_name_raw}..." if self.nargs != 1 else self.display_name_raw


class _PlainCommand(TyperCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if type(param) is TyperArgument:
                param.__class__ = _PlainArgument


_plain_help(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentcore {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress at INFO level."),
) -> None:
    safe_streams()
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


def main() -> None:
    app()
