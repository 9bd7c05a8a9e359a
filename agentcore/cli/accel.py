"""``agentcore accel``: simulated Trainium profiles, simulations, comparisons, capacity plans and spend."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentcore.accel.ledger import GROUP_KEYS, Ledger
from agentcore.accel.sim.capacity import CapacityQuestion, plan_capacity
from agentcore.accel.sim.charts import line_chart
from agentcore.accel.sim.config import load_config
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog
from agentcore.accel.sim.report import SimulationReport
from agentcore.accel.sim.simulator import Simulator
from agentcore.accel.sim.workload import PRESETS
from agentcore.cli.output import fail
from agentcore.errors import AgentCoreError

app = typer.Typer(
    help="Simulated Trainium capacity: device profiles, workload simulation, comparisons, capacity and spend.",
    no_args_is_help=True,
)
console = Console()

JSON_OPTION = typer.Option(False, "--json", help="Print the result as one JSON object instead of tables.")
WORKLOAD_HELP = f"A preset ({', '.join(PRESETS)}) or a workload .json/.toml file."
PATHS_OPTION = typer.Option([], "--profiles", help="Extra profile TOML files or folders (repeatable).")
SET_OPTION = typer.Option([], "--set", help="Override a figure, e.g. --set trn3.usd_per_chip_hour=4.1 (repeatable).")


def _catalog(paths: list[Path], settings: list[str]) -> ProfileCatalog:
    config = load_config()
    overrides = dict(config.overrides)
    for setting in settings:
        key, sep, value = setting.partition("=")
        try:
            overrides[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise typer.BadParameter(f"--set {setting!r}: expected CHIP.FIELD=NUMBER, e.g. trn3.usd_per_chip_hour=4.1")
    return load_catalog([*config.profiles, *paths], overrides)


def _emit(value: BaseModel | dict[str, Any]) -> None:
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    typer.echo(json.dumps(data, separators=(",", ":")))


@contextmanager
def _progress(enabled: bool, label: str) -> Iterator[Callable[[int, int], None] | None]:
    if not enabled:
        yield None
        return
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn("requests"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


@app.command("profiles")
def profiles(
    cite: str | None = typer.Option(None, "--cite", help="Show every figure of one chip with its source."),
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List the device profiles (chips, systems); clusters are NAME:COUNT, e.g. trn3-ultraserver-gen2:1000."""
    try:
        catalog = _catalog(paths, settings)
        if cite is not None:
            chip = catalog.chips.get(cite)
            if chip is None:
                raise AgentCoreError(f"unknown chip {cite!r}; known chips: {', '.join(catalog.chips)}")
            rows = {
                name: {"value": figure.value, "citation": figure.citation,
                       "url": catalog.sources[figure.source].url if figure.source else None}
                for name, figure in chip.figures().items()
            }  # fmt: skip
            if as_json:
                _emit({"chip": cite, "projected": chip.projected, "figures": rows})
                return
            table = Table("figure", "value", "citation", "url", title=f"{chip.name}")
            for name, row in rows.items():
                table.add_row(name, f"{row['value']:g}", str(row["citation"]), str(row["url"] or ""))
            console.print(table)
            return
        listed = {name: catalog.profile(name) for name in catalog.names()}
    except AgentCoreError as error:
        fail(error)
    if as_json:
        _emit({name: {**profile.totals(), "projected": profile.projected} for name, profile in listed.items()})
        return
    table = Table("profile", "chip", "chips", "cores", "FP8 PF", "BF16 PF", "HBM GiB", "HBM TB/s", "$/h", "max kW")
    for name, profile in listed.items():
        totals = profile.totals()
        table.add_row(
            name + (" [yellow](projected)[/yellow]" if profile.projected else ""), profile.chip.name,
            str(profile.chips), str(profile.cores), f"{totals['fp8_pflops']:,.1f}", f"{totals['bf16_pflops']:,.1f}",
            f"{totals['hbm_gib']:,.0f}", f"{totals['hbm_tbps']:,.1f}", f"{totals['usd_per_hour']:,.2f}",
            f"{totals['max_kw']:,.1f}",
        )  # fmt: skip
    console.print(table)
    console.print("Every figure cites a source or a named assumption: `agentcore accel profiles --cite trn3`.")


def _percentiles(report: SimulationReport) -> str:
    return f"{report.latency.p50_ms:.3f} / {report.latency.p95_ms:.3f} / {report.latency.p99_ms:.3f}"


def _report_table(reports: list[SimulationReport], ratios: dict[str, float] | None = None) -> Table:
    table = Table("metric", *(report.profile for report in reports), *(["B / A"] if ratios else []))
    rows: list[tuple[str, Callable[[SimulationReport], str], str | None]] = [
        ("requests (completed / rejected)", lambda r: f"{r.completed:,} / {r.rejected:,}", None),
        ("throughput (req/s)", lambda r: f"{r.throughput_rps:,.0f}", "throughput_ratio"),
        ("latency p50 / p95 / p99 (ms)", _percentiles, "p99_latency_ratio"),
        ("mean queue / device (ms)", lambda r: f"{r.mean_queue_ms:.3f} / {r.mean_device_ms:.3f}", None),
        ("batches (mean size)", lambda r: f"{r.batches:,} ({r.mean_batch:.1f})", None),
        ("utilisation", lambda r: f"{r.utilisation:.1%}", None),
        ("$ per 1,000 requests", lambda r: f"{r.usd_per_1k:.6f}", "usd_per_1k_ratio"),
        ("J per 1,000 requests", lambda r: f"{r.joules_per_1k:,.2f}", "joules_per_1k_ratio"),
        ("simulated in (wall s)", lambda r: f"{r.wall_seconds:.2f}", None),
    ]  # fmt: skip
    for label, cell, ratio in rows:
        extra = [f"{ratios[ratio]:.2f}x" if ratio and ratios and ratio in ratios else ""] if ratios else []
        table.add_row(label, *(cell(report) for report in reports), *extra)
    return table


def _write_outputs(report: SimulationReport, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{report.profile.replace(':', 'x')}-{report.workload}"
    files = {
        out / f"{stem}.json": report.model_dump_json(indent=1),
        out / f"{stem}-utilisation.svg": line_chart(
            report.timeline, title=f"{report.profile}: cores busy", x_label="time (s)", y_label="fraction busy"
        ),
        out / f"{stem}-latency-cdf.svg": line_chart(
            [(ms, p / 100) for p, ms in report.latency_cdf],
            title=f"{report.workload}: latency CDF", x_label="latency (ms)", y_label="fraction of requests",
        ),
    }  # fmt: skip
    for path, text in files.items():
        path.write_text(text)
    return list(files)


@app.command("simulate")
def simulate(
    profile: str = typer.Option(None, "--profile", "-p", help="Device profile (default: [accel] profile)."),
    workload: str = typer.Option("embeddings", "--workload", "-w", help=WORKLOAD_HELP),
    out: Path = typer.Option(
        Path(".agentcore/simulations"), "--out", help="Folder for the JSON report and SVG charts."
    ),
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Simulate a workload on a profile (no onnxruntime): throughput, latency percentiles, utilisation, $ and J."""
    try:
        simulator = Simulator(profile or load_config().profile, catalog=_catalog(paths, settings))
        with _progress(not as_json, f"simulating {workload}") as progress:
            report = simulator.run(workload, progress=progress)
        written = _write_outputs(report, out)
    except AgentCoreError as error:
        fail(error)
    if as_json:
        _emit(report)
        return
    console.print(_report_table([report]))
    console.print(f"[dim]simulated, not measured; wrote {', '.join(str(path) for path in written)}[/dim]")


@app.command("compare")
def compare(
    profile_a: str = typer.Argument(..., help="Profile A (the baseline)."),
    profile_b: str = typer.Argument(..., help="Profile B; ratios are B over A."),
    workload: str = typer.Option("compute-bound", "--workload", "-w", help=WORKLOAD_HELP),
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Run one workload on two profiles side by side, with B/A ratios (throughput_ratio in --json)."""
    try:
        simulator = Simulator(profile_a, catalog=_catalog(paths, settings))
        with _progress(not as_json, f"comparing on {workload}") as progress:
            comparison = simulator.compare(profile_b, workload, progress=progress)
    except AgentCoreError as error:
        fail(error)
    if as_json:
        _emit(comparison.model_dump(mode="json", exclude={"a": {"timeline"}, "b": {"timeline"}}))
        return
    ratios = comparison.model_dump(
        include={"throughput_ratio", "p99_latency_ratio", "usd_per_1k_ratio", "joules_per_1k_ratio"}
    )
    console.print(_report_table([comparison.a, comparison.b], ratios))


@app.command("capacity")
def capacity(
    model: str = typer.Option("minilm", "--model", help="minilm, minilm-int8, mlp-WIDTHxLAYERS or an .onnx path."),
    rps: float = typer.Option(..., "--rps", help="Target requests per second for the whole fleet."),
    p99_ms: float = typer.Option(..., "--p99-ms", help="p99 latency target in milliseconds."),
    unit: str = typer.Option("trn3", "--unit", help="The unit the fleet is built from: a chip or a system profile."),
    seq: int = typer.Option(128, "--seq", help="Tokens per request."),
    precision: str = typer.Option("bf16", "--precision", help="fp32, bf16, fp8 or fp4."),
    max_batch: int = typer.Option(32, "--max-batch", help="Dynamic batching: largest batch."),
    max_delay_ms: float = typer.Option(2.0, "--max-delay-ms", help="Dynamic batching: longest wait to fill a batch."),
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """How many chips serve RPS requests/s at p99 <= P99_MS (answers up to million-chip clusters)."""
    try:
        simulator = Simulator(unit, catalog=_catalog(paths, settings))
        question = CapacityQuestion(
            model=model, target_rps=rps, p99_ms=p99_ms, seq=seq, precision=precision, max_batch=max_batch,
            max_delay_ms=max_delay_ms,
        )  # fmt: skip
        with console.status("bisecting the per-unit load") if not as_json else nullcontext():
            plan = plan_capacity(question, simulator.profile, simulator.service)
    except (AgentCoreError, ValueError) as error:
        fail(error)
    if as_json:
        _emit(plan)
        return
    table = Table("unit", "per-unit req/s", "per-unit p99 ms", "units", "chips", "cores", "$/h")
    table.add_row(
        plan.unit, f"{plan.per_unit_rps:,.0f}", f"{plan.per_unit_p99_ms:.3f}", f"{plan.units:,}", f"{plan.chips:,}",
        f"{plan.cores:,}", f"{plan.usd_per_hour:,.2f}",
    )  # fmt: skip
    console.print(table)
    console.print(f"[dim]simulated: {plan.probes} one-unit simulations, Poisson load split evenly over units[/dim]")


def _window(text: str | None) -> timedelta | None:
    if text is None:
        return None
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
    number, unit = text[:-1], text[-1:]
    if unit not in units or not number.replace(".", "", 1).isdigit():
        raise typer.BadParameter(f"--window {text!r}: expected a number and a unit (s, m, h, d), e.g. 24h")
    return timedelta(**{units[unit]: float(number)})


@app.command("ledger")
def ledger(
    by: list[str] = typer.Option(["tenant"], "--by", help=f"Group by ({', '.join(GROUP_KEYS)}); repeatable."),
    window: str | None = typer.Option(None, "--window", help="Only the last N s/m/h/d, e.g. 24h."),
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant."),
    user: str | None = typer.Option(None, "--user", help="Only this user."),
    agent: str | None = typer.Option(None, "--agent", help="Only this agent."),
    database: str | None = typer.Option(None, "--database", "-d", help="SQLAlchemy URL or SQLite path."),
    export: Path | None = typer.Option(None, "--export", help="Also write the receipts to a .csv or .json file."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Simulated spend (dollars, joules, device-seconds) from the receipt ledger."""
    try:
        book = Ledger(database)
        span = _window(window)
        rows = book.report(by=by, tenant=tenant, user=user, agent=agent, window=span)  # type: ignore[arg-type]
        exported = book.export(export, window=span) if export else None
    except AgentCoreError as error:
        fail(error)
    if as_json:
        _emit({"rows": [row.model_dump(mode="json") for row in rows], "exported": exported})
        return
    table = Table(*by, "calls", "items", "$", "J", "device s", title="simulated spend")
    for row in rows:
        table.add_row(
            *(str(row.group[key]) for key in by), f"{row.calls:,}", f"{row.items:,}", f"{row.usd:.6f}",
            f"{row.joules:,.2f}", f"{row.device_seconds:.4f}",
        )  # fmt: skip
    console.print(table)
    if exported is not None:
        console.print(f"exported {exported} receipts to {export}")
