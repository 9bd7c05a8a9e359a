"""``agentcore gateway``: audit verify/export, approvals, status, and the MCP proxy server."""

from __future__ import annotations

import datetime
import gc
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from agentcore.cli.output import DATABASE_HELP, cell, console, existing_database, fail, json_flag, json_text
from agentcore.errors import AgentCoreError
from agentcore.gateway import canonical
from agentcore.text import printable

if TYPE_CHECKING:
    from agentcore.gateway.anchors import AnchorSink
    from agentcore.gateway.audit import AuditLog
    from agentcore.gateway.db import Database

app = typer.Typer(help="Operate the tool gateway: audit log, approvals, status, MCP proxy.", no_args_is_help=True)
audit_app = typer.Typer(help="Verify, export and prune the hash-chained audit log.", no_args_is_help=True)
approvals_app = typer.Typer(help="List and decide pending approval requests.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")
app.add_typer(approvals_app, name="approvals")

DATABASE = typer.Option(None, "--database", "-d", metavar="PATH_OR_URL", help=DATABASE_HELP)


def _db(url: str | None) -> Database:
    """Open an existing gateway database; a SQLite path that does not exist is an error, not a new file."""
    from sqlalchemy.engine import make_url

    from agentcore.gateway.db import Database

    resolved = existing_database(url)
    parsed = make_url(resolved)
    try:
        database = Database(resolved)
    except AgentCoreError as error:
        fail(error, 2)
    _reachable(database, parsed.render_as_string(hide_password=True))
    return database


def _reachable(database: Database, shown: str) -> None:
    """Connect once, so an unreachable server is a usage error (exit 2), not a traceback that exits 1, which
    `audit verify` reserves for a broken chain."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with database.engine.connect():
            pass
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        fail(f"cannot connect to the gateway database {shown}: {reason}; check --database PATH_OR_URL", 2)


KEY_FILE = typer.Option(
    None, "--key-file", "-k", help="Audit chain key file (KEY_ID:SECRET lines); default $AGENTCORE_AUDIT_KEY_FILE."
)
ANCHORS = typer.Option(
    None, "--anchors", "-a", help="JSONL file of signed checkpoints; default $AGENTCORE_AUDIT_ANCHORS."
)


def _audit_log(database: str | None, key_file: Path | None, anchors: AnchorSink | None = None) -> AuditLog:
    """The audit log of ``database`` with the keys of ``key_file`` (or the environment); ``anchors`` only where the
    command writes checkpoints (prune)."""
    from agentcore.gateway.audit import AuditLog
    from agentcore.gateway.audit_keys import load_chain_keys

    try:
        return AuditLog(_db(database), keys=load_chain_keys(key_file), anchors=anchors)
    except AgentCoreError as error:
        fail(error, 2)


def _sink(anchors: Path | None) -> AnchorSink | None:
    from agentcore.gateway.anchors import open_sink

    return open_sink(anchors)


@audit_app.command("verify")
def audit_verify(
    database: str | None = DATABASE,
    key_file: Path | None = KEY_FILE,
    anchors: Path | None = ANCHORS,
    as_json: bool = json_flag("the result as one JSON object"),
) -> None:
    """Check the chain in one snapshot; exit 0 when intact, 1 naming the first bad record or the deletion an anchor
    reveals, 2 when the database, a key or an anchor file is missing or unreachable."""
    log, sink = _audit_log(database, key_file), _sink(anchors)
    try:
        result = log.verify(sink)
    except AgentCoreError as error:
        fail(error, 2)
    if as_json:
        typer.echo(json_text(result))
        raise typer.Exit(0 if result.ok else 1)
    if not result.ok:
        fail(f"audit chain broken at record {result.first_bad}: {result.problem}", 1)
    keyed = "keyed (HMAC-SHA-256)" if result.keyed else "NOT keyed (plain SHA-256: no protection against rewrites)"
    pruned = f", records 1-{result.pruned_through} pruned" if result.pruned_through else ""
    console.print(f"audit chain intact: {result.records} records, {keyed}{pruned}", highlight=False)
    if sink is None:
        console.print("no anchors checked: deletions that leave a consistent chain go unnoticed", highlight=False)
    elif result.anchored_seq is None:
        console.print("no anchored checkpoint lies within the remaining records", highlight=False)
    else:
        console.print(f"last verified checkpoint: record {result.anchored_seq} at {_when(result.anchored_at)}",
                      highlight=False)  # fmt: skip


def _date(text: str) -> float:
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        fail(f"--before {text!r} is not a date: use YYYY-MM-DD or an ISO date-time", 2)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


@audit_app.command("prune")
def audit_prune(
    before: str = typer.Option(..., "--before", help="Remove records older than this date (YYYY-MM-DD, UTC)."),
    database: str | None = DATABASE,
    key_file: Path | None = KEY_FILE,
    anchors: Path | None = ANCHORS,
) -> None:
    """Remove old records from the start of the chain; a MACed base and a signed checkpoint vouch for them."""
    try:
        report = _audit_log(database, key_file, _sink(anchors)).prune(_date(before))
    except AgentCoreError as error:
        fail(error, 1)
    console.print(f"pruned {report.removed} records; the chain now starts after record {report.pruned_through}",
                  highlight=False)  # fmt: skip


@audit_app.command("export")
def audit_export(
    database: str | None = DATABASE,
    jsonl: bool = typer.Option(True, "--jsonl/--no-jsonl", help="One JSON object per line (the only format)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
) -> None:
    """Export every audit record in chain order as JSON Lines (forgotten subjects' fields show as erased)."""
    if not jsonl:
        fail("only --jsonl export is supported", 2)
    lines = _audit_log(database, None).export_jsonl()
    if output is None:  # the same data in ASCII JSON: no bidi override reaches the terminal, any encoding writes it
        for line in lines:
            sys.stdout.write((line if line.isascii() else json_text(json.loads(line))) + "\n")
        return
    with output.open("w", encoding="utf-8") as handle:
        count = sum(handle.write(line + "\n") > 0 for line in lines)
    console.print(f"wrote {count} records to {cell(output)}")


def _when(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@approvals_app.command("list")
def approvals_list(
    database: str | None = DATABASE,
    status: str = typer.Option("pending", help="pending, approved, rejected, expired, executed, failed, or all."),
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's requests (default: every tenant's)."),
    as_json: bool = json_flag(),
) -> None:
    """List approval requests."""
    from agentcore.gateway.approvals import ApprovalStore
    from agentcore.gateway.identity import ANY_TENANT

    tenants = ANY_TENANT if tenant is None else tenant
    rows = ApprovalStore(_db(database)).list(None if status == "all" else status, tenant=tenants)
    if as_json:
        for row in rows:
            typer.echo(json_text(row))
        return
    if not rows:
        console.print(f"no {cell(status)} approval requests")
    for a in rows:
        signed = {s.role: s.by for s in a.signoffs}
        roles = ", ".join(f"{r} (by {signed[r]})" if r in signed else r for r in a.approver_roles) or "none named"
        requester = a.requester if a.tenant is None else f"{a.requester} (tenant {a.tenant})"
        console.print(
            printable(
                f"{a.id}  {a.status}  {a.tool}  requested by {requester}  approvers: {roles}  "
                f"created {_when(a.created)}  expires {_when(a.expires)}  args {canonical.dumps(a.args)}"
            ),
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


def _decide(
    approval_id: str, database: str | None, key_file: Path | None, by: str, roles: list[str], tenant: str | None,
    note: str | None, approve: bool,
) -> None:  # fmt: skip
    """Decide as ``by`` of ``tenant``; the decision goes into the audit chain, keyed like the gateway's
    (``--key-file``)."""
    from pydantic import ValidationError

    from agentcore.gateway.approvals import ApprovalStore
    from agentcore.policies.model import Principal

    try:
        approver = Principal(id=by, roles=frozenset(roles))
    except ValidationError as error:  # an approver "" (zero-width characters) signed off as no one
        fail("; ".join(f"--{'by' if e['loc'][0] == 'id' else 'role'} {e['msg']}" for e in error.errors()), 2)
    log = _audit_log(database, key_file)
    store = ApprovalStore(log.db, log)
    try:
        approval = store.decide(approval_id, by=approver, tenant=tenant, approve=approve, note=note)
    except AgentCoreError as error:
        fail(error, 1)
    if approval.status == "pending":
        missing = " and ".join(approval.missing_roles)
        console.print(f"{cell(approval.id)} signed off by {cell(by)}; still needs role {cell(missing)}")
        return
    verb = "approved" if approve else "rejected"
    console.print(
        f"{cell(approval.id)} {verb} by {cell(by)}; "
        "the gateway executes an approved call when its caller waits or retries it"
    )


BY = typer.Option(..., "--by", help="Your principal id (must differ from the requester).")
ROLE = typer.Option([], "--role", help="A role you hold (repeatable); one must be an approver role.")
NOTE = typer.Option(None, "--note", help="Why (kept in the audit).")
TENANT = typer.Option(
    None, "--tenant", help="Your tenant (approvers of a request's tenant decide it; omit for a request without one)."
)


@approvals_app.command("approve")
def approvals_approve(
    approval_id: str, database: str | None = DATABASE, by: str = BY, role: list[str] = ROLE,
    tenant: str | None = TENANT, note: str | None = NOTE, key_file: Path | None = KEY_FILE,
) -> None:  # fmt: skip
    """Sign off a pending request (exit 1 if not permitted: other tenant, wrong role, own request, already signed,
    not pending)."""
    _decide(approval_id, database, key_file, by, role, tenant, note, approve=True)


@approvals_app.command("reject")
def approvals_reject(
    approval_id: str, database: str | None = DATABASE, by: str = BY, role: list[str] = ROLE,
    tenant: str | None = TENANT, note: str | None = NOTE, key_file: Path | None = KEY_FILE,
) -> None:  # fmt: skip
    """Reject a pending request."""
    _decide(approval_id, database, key_file, by, role, tenant, note, approve=False)


@app.command("status")
def status(database: str | None = DATABASE, as_json: bool = json_flag()) -> None:
    """Show each gateway's active bundle hash and last reload error (exit 1 if any gateway has one)."""
    from agentcore.gateway.status import StatusBoard

    rows = StatusBoard(_db(database)).read()
    if as_json:
        for row in rows:
            typer.echo(json_text(row))
    elif not rows:
        console.print("no gateway has reported status to this database")
    for s in [] if as_json else rows:
        console.print(f"gateway {cell(s.name)} (pid {s.pid}, {cell(s.mode)} mode)", highlight=False)
        console.print(f"  bundle: {cell(s.bundle_hash)} loaded {_when(s.loaded_at)}", highlight=False)
        paths = cell(", ".join(s.paths) or "(none: default deny)")
        console.print(f"  policies: {paths}", highlight=False, soft_wrap=True)
        if s.last_error:
            console.print(f"  last reload FAILED at {_when(s.last_error_at)}:", highlight=False)
            console.print(cell(s.last_error, lines=True), highlight=False, soft_wrap=True)
    if any(s.last_error for s in rows):
        raise typer.Exit(1)


def _tune_gc_for_serving() -> None:
    """A server keeps what it loaded at startup (modules, schemas, the compiled bundle) for life: freezing it keeps
    every collection from walking it again, and a larger first generation collects less often. Each MCP call
    allocates thousands of short-lived objects; this is the usual tuning of long-running Python servers."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def _serve_metrics(host: str, port: int) -> None:
    """Install a Prometheus reader in the meter provider and serve /metrics with prometheus_client's own server."""
    try:
        from prometheus_client import start_http_server

        from agentcore.gateway.otel_setup import configure_from_env

        configure_from_env(prometheus=True)
        start_http_server(port, addr=host)
    except ModuleNotFoundError as error:
        fail(f"--metrics needs the otel extra (missing {error.name}): pip install 'agentcore-governance[otel]'", 2)
    except AgentCoreError as error:
        fail(error, 2)
    except OSError as error:
        fail(f"cannot serve metrics on {host}:{port}: {error}", 2)


_MCP_EXTRA = frozenset({"mcp", "mcp_types", "jwt", "anyio", "uvicorn", "httpx2", "starlette"})  # what it brings


@app.command("serve")
def serve(
    config: Path = typer.Option(..., "--config", "-c", help="gateway.toml: policies, targets, identity, auth."),
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio or http (streamable HTTP at /mcp)."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address."),
    port: int = typer.Option(8765, "--port", help="HTTP port."),
    metrics: bool = typer.Option(
        False, "--metrics", help="Serve Prometheus metrics at http://HOST:METRICS_PORT/metrics (needs the otel extra)."
    ),
    metrics_port: int = typer.Option(9464, "--metrics-port", help="Port of the Prometheus /metrics endpoint."),
) -> None:
    """Serve the gateway as an MCP server that aggregates upstream MCP servers and enforces policies.

    Spans and metrics are exported as the standard OTEL_* variables say (nothing unless they are set)."""
    try:
        import anyio

        from agentcore.gateway.mcp import McpProxy, load_config
        from agentcore.gateway.mcp.server import loop_options
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in _MCP_EXTRA:
            raise
        fail(f"`gateway serve` needs the mcp extra (missing {error.name}): pip install 'agentcore-governance[mcp]'", 2)

    if transport not in ("stdio", "http"):
        fail(f"--transport must be stdio or http, not {transport!r}", 2)
    if metrics:
        _serve_metrics(host, metrics_port)
    try:
        proxy = McpProxy(load_config(config))
        _tune_gc_for_serving()
        if transport == "stdio":
            anyio.run(proxy.run_stdio, backend_options=loop_options())
        else:
            anyio.run(proxy.run_http, host, port, backend_options=loop_options())
    except AgentCoreError as error:
        fail(error, 2)
