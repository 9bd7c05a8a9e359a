"""Console output shared by every command: tables on stdout, errors on stderr, exit codes for CI."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

console = Console()
DATABASE_HELP = (
    "SQLAlchemy URL or SQLite path (default: the database of the nearest agentcore.toml, "
    "else $AGENTCORE_DATABASE_URL, else .agentcore/agentcore.db)."
)
errors = Console(stderr=True, soft_wrap=True)


def fail(message: object, code: int = 1) -> NoReturn:
    """Print ``error: message`` on stderr (never wrapped mid-line) and exit with ``code``.

    The message is escaped: error texts quote config sections like ``[accel]`` that rich would read as markup.
    """
    errors.print(f"[red]error:[/red] {escape(str(message))}", highlight=False)
    raise typer.Exit(code)
