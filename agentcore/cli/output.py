"""Console output shared by every command: tables on stdout, errors on stderr, exit codes for CI."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn

from agentcore.accel.units import size
from agentcore.errors import AgentCoreError, ConfigError

console = Console()
DATABASE_HELP = (
    "SQLAlchemy URL or SQLite path (default: the database of the nearest agentcore.toml, "
    "else $AGENTCORE_DATABASE_URL, else .agentcore/agentcore.db)."
)
errors = Console(stderr=True, soft_wrap=True)


Update = Callable[[int, str | None], None]


@contextmanager
def progress(label: str, total: int) -> Iterator[Update]:
    """``update(done, what)``: a bar on a terminal; when piped, a plain ``label: what (done/total)`` line on stderr
    for each step, so long work in CI logs is not silent either."""
    if errors.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=errors, transient=True) as bar:
            task = bar.add_task(label, total=total)
            yield lambda done, what: bar.update(task, completed=done, description=what or label)
        return

    def line(done: int, what: str | None) -> None:
        errors.print(f"{label}: {what or 'working'} ({done}/{total})", highlight=False, markup=False)

    yield line


@contextmanager
def byte_progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """``update(done, total)`` in bytes: a bar with sizes on a terminal; when piped, a plain line at each tenth."""
    if errors.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(binary_units=True))
        with Progress(*columns, console=errors, transient=True) as bar:
            task = bar.add_task(label, total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)
        return
    reported = -1

    def line(done: int, total: int) -> None:
        nonlocal reported
        tenth = 10 * done // total if total else 0
        if tenth > reported:
            reported = tenth
            errors.print(f"{label}: {size(done)} of {size(total)}", highlight=False, markup=False)

    yield line


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


def existing_database(url: str | None) -> str:
    """The URL of ``url`` (None: the discovered database) for a command that reads one: a SQLite file that does
    not exist is a usage error (exit 2), not a new empty database whose zeros read like an answer."""
    from sqlalchemy.engine import make_url

    from agentcore.gateway.db import resolve_url

    try:
        resolved = resolve_url(url, create_folder=False)
    except AgentCoreError as error:
        fail(error, 2)
    parsed = make_url(resolved)
    file = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if file not in (None, "", ":memory:") and not Path(str(file)).exists():
        fail(f"no database at {file}; pass --database PATH_OR_URL", 2)
    return resolved
