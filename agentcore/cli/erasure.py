"""``agentcore forget``: erase one person from memory and the gateway database in one command."""

from __future__ import annotations

import typer

from agentcore.cli.output import DATABASE_HELP, console


def forget(
    subject: str = typer.Argument(..., help="User / actor / principal id to erase."),
    database: str | None = typer.Option(None, "--database", "-d", metavar="PATH_OR_URL", help=DATABASE_HELP),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Erase a person: memory rows deleted, audit records made unreadable (their keys destroyed; the chain still
    verifies), call history and approval requests deleted. Irreversible."""
    from agentcore.erasure import forget as erase

    if not yes:
        question = f"Erase every trace of {subject!r} from memory and the gateway? This cannot be undone"
        typer.confirm(question, abort=True)
    report = erase(subject, database=database)
    memory, gateway = report.memory, report.gateway
    console.print(
        f"forgot {subject!r}: memory {memory.events} events, {memory.records} records, {memory.sessions} sessions; "
        f"gateway {gateway.subject_keys} audit keys destroyed, {gateway.calls} history rows, "
        f"{gateway.approvals} approval requests",
        highlight=False,
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command("forget")(forget)
