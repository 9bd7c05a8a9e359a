"""Console output shared by every command: tables on stdout, errors on stderr, exit codes for CI."""

from __future__ import annotations

from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from agentcore.errors import ConfigError

console = Console()
DATABASE_HELP = (
    "SQLAlchemy URL or SQLite path (default: the database of the nearest agentcore.toml, "
    "else $AGENTCORE_DATABASE_URL, else .agentcore/agentcore.db)."
)
errors = Console(stderr=True, soft_wrap=True)


def json_flag(what: str = "JSON lines") -> Any:
    """The ``--json`` switch of a command that prints data: ``what`` it prints instead of text."""
    return typer.Option(False, "--json", help=f"Print {what} instead of text.")


def fail(message: object, code: int | None = None) -> NoReturn:
    """Print ``error: message`` on stderr (never wrapped mid-line) and exit with ``code``.

    Without a code, bad input (a :class:`ConfigError`: unknown profile, workload, setting) exits 2 and any other
    failure 1, the convention every command follows (see docs/cli.md).

    The message is escaped: error texts quote config sections like ``[accel]`` that rich would read as markup.
    """
    errors.print(f"[red]error:[/red] {escape(str(message))}", highlight=False)
    raise typer.Exit(code if code is not None else 2 if isinstance(message, ConfigError) else 1)
