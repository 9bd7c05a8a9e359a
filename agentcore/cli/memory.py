"""``agentcore memory``: inspect and maintain the per-actor memory store (stats, events, search, forget, purge)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

import typer
from rich.table import Table

from agentcore.cli.output import DATABASE_HELP, cell, console, existing_database, fail, json_text
from agentcore.errors import AgentCoreError
from agentcore.text import printable

if TYPE_CHECKING:
    from agentcore.memory import Event, MemoryRecord, MemoryStore
    from agentcore.memory.search import SearchMode

app = typer.Typer(help="Inspect and maintain per-actor memory: events, long-term records, forget, purge.")

DB = typer.Option(None, "--db", "--database", "-d", metavar="PATH_OR_URL", help=DATABASE_HELP)
JSON = typer.Option(False, "--json", help="Print JSON lines instead of a table.")
TENANT = typer.Option(
    "default",
    "--tenant",
    help="The tenant whose actors this reads or erases (actor ids are unique within a tenant): what "
    "MemoryStore(tenant=...) wrote. Default: 'default', the store's own default.",
)


@contextmanager
def _store(url: str | None, tenant: str = "default") -> Iterator[MemoryStore]:
    """The store of ``tenant`` at ``url`` (which must exist); any agentcore error inside the block becomes
    ``error: ...`` and exit code 1."""
    from agentcore.memory import MemoryStore

    resolved = existing_database(url)
    try:
        with MemoryStore(resolved, tenant=tenant) as store:
            yield store
    except AgentCoreError as error:
        fail(error)


@app.command()
def stats(db: str | None = DB, as_json: bool = JSON, tenant: str = TENANT) -> None:
    """Counts of one tenant's actors, sessions, events and records, including expired and superseded ones."""
    with _store(db, tenant) as store:
        result = store.stats()
    if as_json:
        typer.echo(json_text(result))
        return
    table = Table("metric", "value")
    for name, value in result.model_dump().items():
        table.add_row(name, str(value))
    console.print(table)


@app.command()
def events(
    actor: str = typer.Argument(..., help="Actor (user) id."),
    session: str | None = typer.Argument(None, help="Session id; omit to list the actor's sessions."),
    last: int = typer.Option(20, "--last", "-n", min=1, help="How many of the most recent events to show."),
    db: str | None = DB,
    as_json: bool = JSON,
    tenant: str = TENANT,
) -> None:
    """List an actor's sessions, or the last events of one session (oldest first)."""
    with _store(db, tenant) as store:
        if session is None:
            for name in store.list_sessions(actor):
                typer.echo(printable(name))
            return
        found = store.last_turns(actor, session, last)
    if as_json:
        for event in found:
            typer.echo(json_text(event))
        return
    table = Table("id", "time", "role", "text")
    for event in found:
        table.add_row(str(event.id), event.created_at.isoformat(timespec="seconds"), event.role.value, cell(event.text))
    console.print(table)


@app.command()
def search(
    actor: str = typer.Argument(..., help="Actor (user) id."),
    query: str = typer.Argument(..., help="What to look for."),
    records: bool = typer.Option(False, "--records", help="Search long-term records instead of events."),
    namespace_prefix: str | None = typer.Option(None, "--namespace-prefix", help="Only records under this path."),
    top_k: int = typer.Option(10, "--top-k", "-k", min=1, max=100, help="How many results."),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid, vector or fulltext."),
    db: str | None = DB,
    as_json: bool = JSON,
    tenant: str = TENANT,
) -> None:
    """Hybrid (BM25 + vector) search over one actor's events or records."""
    search_mode = cast("SearchMode", mode)
    rows: list[tuple[float, float | None, str, Event | MemoryRecord]]
    with _store(db, tenant) as store, console.status("embedding new events and searching"):
        if records:
            found = store.retrieve(actor, query, namespace_prefix=namespace_prefix, top_k=top_k, mode=search_mode)
            rows = [(hit.score, hit.similarity, hit.record.namespace, hit.record) for hit in found]
        else:
            events = store.search_events(actor, query, top_k=top_k, mode=search_mode)
            rows = [(hit.score, hit.similarity, hit.event.session_id, hit.event) for hit in events]
    if as_json:
        for score, similarity, _, item in rows:
            typer.echo(json_text({"score": score, "similarity": similarity, "item": item.model_dump(mode="json")}))
        return
    table = Table("score", "cosine", "namespace" if records else "session", "text")
    for score, similarity, where, item in rows:
        table.add_row(f"{score:.4f}", "" if similarity is None else f"{similarity:.3f}", cell(where), cell(item.text))
    console.print(table)


@app.command()
def forget(
    actor: str = typer.Argument(..., help="Actor (user) id whose memory is erased."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    db: str | None = DB,
    tenant: str = TENANT,
) -> None:
    """Erase every event, record, session, full-text entry and vector of one actor of one tenant (irreversible)."""
    if not yes:
        typer.confirm(
            f"Erase all memory of actor {printable(repr(actor))} in tenant {printable(repr(tenant))}? "
            "This cannot be undone",
            abort=True,
        )
    with _store(db, tenant) as store:
        report = store.forget(actor)
    counts = f"{report.events} events, {report.records} records, {report.sessions} sessions"
    console.print(f"forgot {cell(repr(actor))} in tenant {cell(repr(report.tenant))}: {counts}")


@app.command()
def purge(db: str | None = DB) -> None:
    """Delete expired events and records of every tenant (they are already hidden from every query)."""
    with _store(db) as store:
        report = store.purge()
    console.print(f"purged {report.events} expired events and {report.records} expired records")
