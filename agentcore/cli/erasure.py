"""``agentcore forget``: erase one person from memory and the gateway database in one command."""

from __future__ import annotations

import typer

from agentcore.cli.output import DATABASE_HELP, console


def forget(
    subject: str = typer.Argument(..., help="User / actor / principal id to erase."),
    database: str | None = typer.Option(None, "--database", "-d", metavar="PATH_OR_URL", help=DATABASE_HELP),
    tenant: str | None = typer.Option(
        None,
        "--tenant",
        help="Erase the id in this tenant only (ids are unique within a tenant): its memory, audit records, history "
        "and approvals there. Default: every tenant.",
    ),
    no_tenant: bool = typer.Option(
        False,
        "--no-tenant",
        help="Erase only what the id did without a tenant (in memory: the 'default' tenant, where stores opened "
        "without one keep their rows).",
    ),
    state: str | None = typer.Option(
        None,
        "--state",
        metavar="URL",
        help="The gateway's state store when it has one of its own (its `state` setting, e.g. redis://host:6379/0): "
        "the id's calls are erased there too. Default: the history in the database only.",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Erase a person: memory rows deleted, audit records made unreadable (their keys destroyed; the chain still
    verifies), call history and approval requests deleted. Irreversible."""
    from agentcore.erasure import forget as erase
    from agentcore.gateway.identity import ANY_TENANT, tenant_filter

    if tenant is not None and no_tenant:
        raise typer.BadParameter("give --tenant T or --no-tenant, not both", param_hint="--no-tenant")
    scope = tenant_filter(None if no_tenant else ANY_TENANT if tenant is None else tenant)
    if scope is ANY_TENANT:
        where, question = "in every tenant", f"Erase every trace of {subject!r} from memory and the gateway"
    else:
        where = "without a tenant" if scope is None else f"in tenant {scope!r}"
        question = f"Erase every trace of {subject!r} {where} from memory and the gateway"
    if not yes:
        typer.confirm(f"{question}? This cannot be undone", abort=True)
    report = erase(subject, database=database, tenant=scope, state=state)
    memory, gateway = report.memory, report.gateway
    legacy = ""
    if gateway.legacy_keys:
        legacy = (f" ({gateway.legacy_keys} without a tenant, from before keys were per tenant: the id's records "
                  "under them are unreadable in every tenant)")  # fmt: skip
    console.print(
        f"forgot {subject!r} {where}: memory {memory.events} events, {memory.records} records, "
        f"{memory.sessions} sessions; gateway {gateway.subject_keys} audit keys destroyed{legacy}, "
        f"{gateway.calls} history rows, {gateway.approvals} approval requests"
        + (f", {gateway.state_calls} calls in the state store" if state is not None else ""),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    app.command("forget")(forget)
