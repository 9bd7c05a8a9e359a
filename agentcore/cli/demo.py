"""``agentcore demo``: a governed retail customer-service agent, end to end, with a summary a customer can read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.panel import Panel
from rich.table import Table

from agentcore.accel.units import joules, seconds, usd
from agentcore.cli.output import cell, console, fail, progress
from agentcore.errors import AgentCoreError
from agentcore.text import printable

if TYPE_CHECKING:
    from agentcore.demo.app import DemoReport
    from agentcore.demo.costs import FleetCost

OK, BAD = "[green]✓[/green]", "[red]✗[/red]"


def demo(
    sessions: int | None = typer.Option(
        None, "--sessions", "-n", min=1, max=500, help="Conversations to play (default: each scenario once)."
    ),
    out: Path = typer.Option(
        Path(".agentcore/demo"), "--out", "-o", help="Report folder (created; earlier demo databases replaced)."
    ),
    seed: int = typer.Option(7, "--seed", help="Seed of the generated store."),
    agent: str | None = typer.Option(
        None,
        "--agent",
        metavar="MODULE:FACTORY",
        help="Your agent: FACTORY() returns an object with respond(message, session) (default: the scripted agent).",
    ),
) -> None:
    """Play retail conversations through policies, gateway, memory, evaluations and simulated Trainium."""
    from agentcore.demo.app import DemoSettings, run_demo
    from agentcore.demo.scenarios import ScenarioError

    chosen = {"out": out, "seed": seed, "agent": agent} | ({} if sessions is None else {"sessions": sessions})
    settings = DemoSettings.model_validate(chosen)
    console.print(Panel.fit(
        "[bold]agentcore demo[/bold]: a customer-service agent for a retail store (τ-bench's retail domain)\n"
        f"{settings.sessions} conversations · policies enforced by the gateway · memory across sessions · "
        "evaluations · costs on simulated Trainium",
    ))  # fmt: skip
    try:
        with progress("demo", settings.sessions) as update:
            report = run_demo(settings, progress=lambda what, done, total: update(done, what))
    except (AgentCoreError, ScenarioError, OSError) as error:
        fail(error)
    _print(report)
    raise typer.Exit(0 if report.passed else 1)


def _print(report: DemoReport) -> None:
    store = report.store
    console.print(
        f"Store (SQLite, seed {report.settings.seed}): {store['users']} customers, {store['orders']} orders, "
        f"{store['products']} products with {store['variants']} variants, {store['payment_methods']} payment methods"
    )
    console.print(_conversations(report))
    console.print(_decisions(report))
    console.print(_memory(report))
    console.print(_evaluation(report))
    costs = _costs(report)
    unavailable = f"[yellow]accel costs unavailable:[/yellow] {cell(report.costs_error)}"
    console.print(costs if costs is not None else unavailable)
    audit = report.audit
    chain = (
        f"{OK} verified"
        if audit.get("ok")
        else f"{BAD} BROKEN at record {cell(audit.get('first_bad'))}: {cell(audit.get('problem'))}"
    )
    console.print(f"Audit log: {audit.get('records')} hash-chained records, {chain}")
    console.print(f"Report folder [bold]{cell(report.settings.out)}[/bold]: {cell(', '.join(report.files))}")
    from agentcore.demo.app import INSPECT

    where = f"Inspect it (its agentcore.toml names the demo's database): cd {report.settings.out}"
    console.print(printable(where), highlight=False, markup=False, soft_wrap=True)
    for command in INSPECT:
        console.print(f"  {command}", highlight=False, markup=False, soft_wrap=True)
    verdict = f"{OK} demo passed" if report.passed else f"{BAD} demo FAILED (see the tables above)"
    console.print(f"{verdict} in {report.seconds:.1f} s")


def _conversations(report: DemoReport) -> Table:
    table = Table(title="Conversations (transcripts.md has every turn)", title_justify="left")
    for column in ("scenario", "customer", "calls", "as scripted"):
        table.add_column(column)
    for s in report.sessions:
        status = OK if s.as_scripted else f"{BAD} " + cell("; ".join(s.off_script))
        table.add_row(cell(s.title), cell(s.customer or "(not identified)"), str(s.calls), status)
    return table


def _decisions(report: DemoReport) -> Table:
    d = report.decisions
    table = Table(title="Gateway decisions (from the audit log)", title_justify="left")
    table.add_column("decision")
    table.add_column("calls", justify="right")
    table.add_column("top reasons")
    table.add_row("allowed", str(d.allowed), "")
    table.add_row("denied", str(d.denied), "\n".join(f"{cell(rule)}: {count}" for rule, count in d.top_denials))
    table.add_row("needed approval", str(d.needed_approval), "\n".join(f"{cell(r)}: {n}" for r, n in d.approval_rules))
    approvers = "by " + cell(", ".join(d.approvers)) if d.approvers else ""
    table.add_row("approved (approvals API)", str(d.approved), approvers)
    return table


def _memory(report: DemoReport) -> Table:
    m = report.memory
    table = Table(title="Memory", title_justify="left")
    table.add_column("what")
    table.add_column("value")
    table.add_row("preference records created", str(m.preferences))
    table.add_row("session summaries", str(m.summaries))
    table.add_row("conversation events stored", str(m.events))
    for item in m.carried_over:
        value = _plain(item["value"])
        carried = f"{item['customer']}: {item['kind']} {value} (from {item['remembered_in']})"
        table.add_row("carried over", cell(carried))
    return table


def _plain(value: object) -> str:
    """A remembered value as a customer would read it (an address JSON object as one line)."""
    try:
        parsed = json.loads(str(value))
    except json.JSONDecodeError:
        return str(value)
    return ", ".join(str(v) for v in parsed.values() if v) if isinstance(parsed, dict) else str(value)


def _evaluation(report: DemoReport) -> Table:
    e = report.evaluation
    title = f"Evaluation suite '{cell(e.suite)}' over {e.sessions} recorded sessions"
    table = Table(title=title, title_justify="left")
    for column in ("evaluator", "level", "n", "mean", "pass rate", "gates", ""):  # names whole; gates may wrap
        right = column in ("n", "mean", "pass rate")
        table.add_column(column, justify="right" if right else "left", no_wrap=column != "gates")
    for line in e.evaluators:
        name, gates = line.evaluator.removeprefix("Builtin."), ", ".join(line.gates) or "reported"
        mark = OK if line.passed else BAD
        figures = (str(line.count), f"{line.mean:.3f}", f"{line.pass_rate:.0%}")
        table.add_row(cell(name), line.level, *figures, cell(gates), mark)
    return table


def _costs(report: DemoReport) -> Table | None:
    c = report.costs
    if c is None:
        return None
    table = Table(
        title=f"Model work: {c.calls} encoder calls, {c.texts} texts, {c.tokens} tokens, {seconds(c.cpu_seconds)} "
        f"measured CPU here; ledger charged {usd(c.ledger_usd)} on {cell(c.fleets[0].profile)}. Replayed (simulated):",
        title_justify="left",
    )
    table.add_column("simulated")
    for f in c.fleets:  # one column per fleet: its id stays whole and the table fits 80 columns
        table.add_column(cell(f.profile), justify="right", no_wrap=True)
    rows: list[tuple[str, Callable[[FleetCost], str]]] = [
        ("p50 latency", lambda f: seconds(f.p50_ms / 1000)),
        ("p99 latency", lambda f: seconds(f.p99_ms / 1000)),
        ("core busy", lambda f: seconds(f.busy_core_seconds)),
        ("$ busy", lambda f: usd(f.busy_usd)),
        ("energy busy", lambda f: joules(f.busy_joules)),
        ("$ fleet held", lambda f: usd(f.held_usd)),
    ]
    for label, value in rows:
        table.add_row(label, *(value(f) for f in c.fleets))
    return table


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
