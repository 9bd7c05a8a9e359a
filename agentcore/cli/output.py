"""Console output shared by every command: tables on stdout, errors on stderr, exit codes for CI."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

console = Console()
errors = Console(stderr=True, soft_wrap=True)


def fail(message: object, code: int = 1) -> NoReturn:
    """Print ``error: message`` on stderr (never wrapped mid-line) and exit with ``code``."""
    errors.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)
