"""Console output shared by every command: tables on stdout, errors on stderr, exit codes for CI."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn

from agentcore.accel.units import size
from agentcore.errors import AgentCoreError, ConfigError
from agentcore.text import printable

console = Console()
DATABASE_HELP = (
    "SQLAlchemy URL or SQLite path (default: the database of the nearest agentcore.toml, "
    "else $AGENTCORE_DATABASE_URL, else .agentcore/agentcore.db)."
)
errors = Console(stderr=True, soft_wrap=True)


Update = Callable[[int, str | None], None]


def cell(value: object, *, lines: bool = False) -> str:
    """Text nobody checked (an id, a memory, a trace or evaluator name, a path) as rich markup that shows it as it
    is: markup escaped (``x[/]`` stopped a whole table with a MarkupError, ``[red]`` restyled it) and each
    non-printable character as its escape (``\\x1b``, ``\\n``, ``\\u202e``), so it drives no terminal and forges no
    line. With ``lines``, the text's own line breaks stay (a multi-line error). Lines printed without markup
    (``typer.echo``) take :func:`agentcore.text.printable` alone."""
    if lines:
        return "\n".join(escape(printable(line)) for line in str(value).split("\n"))
    return escape(printable(str(value)))


def json_text(value: BaseModel | object) -> str:
    """``value`` (a model or JSON data) as one line of ASCII JSON: exact data, and every character the encoder
    does not escape by itself (bidi overrides, C1 controls, lone surrogates) written as ``\\uXXXX``, so
    ``--json`` drives no terminal and writes on a stdout of any encoding. Values JSON has no type for (a set a
    condition evaluated to) are written as their ``str``."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(data, separators=(",", ":"), default=str)


def safe_streams() -> None:
    """Unencodable characters print as backslash escapes instead of raising: a name in Greek on an ASCII stdout
    (``PYTHONIOENCODING=ascii``, a C locale) stopped a command with a UnicodeEncodeError half-way through."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict", "surrogateescape"):
            stream.reconfigure(errors="backslashreplace")


@contextmanager
def progress(label: str, total: int) -> Iterator[Update]:
    """``update(done, what)``: a bar on a terminal; when piped, a plain ``label: what (done/total)`` line on stderr
    for each step, so long work in CI logs is not silent either."""
    if errors.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=errors, transient=True) as bar:
            task = bar.add_task(label, total=total)
            yield lambda done, what: bar.update(task, completed=done, description=cell(what) if what else label)
        return

    def line(done: int, what: str | None) -> None:
        errors.print(f"{label}: {printable(what or 'working')} ({done}/{total})", highlight=False, markup=False)

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

    The message is escaped: error texts quote config sections like ``[accel]`` that rich would read as markup, and
    names from files and databases that may hold control characters; its own line breaks stay.
    """
    errors.print(f"[red]error:[/red] {cell(message, lines=True)}", highlight=False)
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
