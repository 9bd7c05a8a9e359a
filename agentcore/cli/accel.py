"""``agentcore accel``: simulated Trainium profiles, simulations, comparisons, capacity plans and spend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentcore.accel.charts import line_chart
from agentcore.accel.errors import ProfileError, WorkloadError
from agentcore.accel.ledger import GROUP_KEYS, Ledger
from agentcore.accel.serving.capacity import LLMCapacityQuestion, plan_llm_capacity
from agentcore.accel.serving.catalogue import load_llms
from agentcore.accel.serving.pricing import RateCard, rate_cards
from agentcore.accel.serving.validation import trn3_claims, validation_table
from agentcore.accel.sim.capacity import CapacityQuestion, plan_capacity
from agentcore.accel.sim.config import load_config
from agentcore.accel.sim.profiles import ProfileCatalog, load_catalog
from agentcore.accel.sim.report import SimulationReport, latency_chart, utilisation_chart
from agentcore.accel.sim.simulator import Simulator
from agentcore.accel.sim.workload import PRESETS
from agentcore.accel.units import joules, seconds, usd
from agentcore.cli.output import DATABASE_HELP, cell, existing_database, fail, json_text
from agentcore.errors import AgentCoreError

app = typer.Typer(
    help="Simulated Trainium capacity: device profiles, workload simulation, comparisons, capacity and spend.",
    no_args_is_help=True,
)
console = Console()

JSON_OPTION = typer.Option(False, "--json", help="Print the result as one JSON object instead of tables.")
WORKLOAD_HELP = f"A preset ({', '.join(PRESETS)}) or a workload .json/.toml file."
PATHS_OPTION = typer.Option([], "--profiles", help="Extra profile TOML files or folders (repeatable).")
LLMS_OPTION = typer.Option([], "--llms", help="Extra LLM catalogue TOML files (repeatable).")
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
    typer.echo(json_text(value))


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
                raise ProfileError(f"unknown chip {cite!r}; known chips: {', '.join(catalog.chips)}")
            rows = {
                name: {"value": figure.value, "citation": figure.citation,
                       "url": catalog.sources[figure.source].url if figure.source else None}
                for name, figure in chip.figures().items()
            }  # fmt: skip
            if as_json:
                _emit({"chip": cite, "projected": chip.projected, "figures": rows})
                return
            table = Table("figure", "value", "citation", "url", title=cell(chip.name))
            for name, row in rows.items():
                table.add_row(cell(name), f"{row['value']:g}", cell(row["citation"]), cell(row["url"] or ""))
            console.print(table)
            return
        listed = {name: catalog.profile(name) for name in catalog.names()}
    except AgentCoreError as error:
        fail(error)
    if as_json:
        _emit({name: {**profile.totals(), "projected": profile.projected} for name, profile in listed.items()})
        return
    # Fits 80 columns without cutting a profile name (the chip is named by the profile; --json has it).
    table = Table(box=None, pad_edge=False, header_style="bold underline")
    table.add_column("profile", no_wrap=True)
    for header in ("chips", "cores", "FP8\nPF", "BF16\nPF", "HBM\nGiB", "HBM\nTB/s", "\n$/h", "max\nkW"):
        table.add_column(header, justify="right", no_wrap=True)
    for name, profile in listed.items():
        totals = profile.totals()
        table.add_row(
            cell(name) + ("[yellow]*[/yellow]" if profile.projected else ""),
            str(profile.chips), str(profile.cores), f"{totals['fp8_pflops']:,.1f}", f"{totals['bf16_pflops']:,.1f}",
            f"{totals['hbm_gib']:,.0f}", f"{totals['hbm_tbps']:,.1f}", f"{totals['usd_per_hour']:,.2f}",
            f"{totals['max_kw']:,.1f}",
        )  # fmt: skip
    console.print(table)
    if any(profile.projected for profile in listed.values()):
        console.print("[yellow]*[/yellow] projected figures (named assumptions, not published specifications)")
    console.print("Every figure cites a source or a named assumption: `agentcore accel profiles --cite trn3`.")


def _percentiles(report: SimulationReport) -> str:
    return f"{report.latency.p50_ms:.3f} / {report.latency.p95_ms:.3f} / {report.latency.p99_ms:.3f}"


def _report_table(reports: list[SimulationReport], ratios: dict[str, float] | None = None) -> Table:
    table = Table("metric", *(cell(report.profile) for report in reports), *(["B / A"] if ratios else []))
    rows: list[tuple[str, Callable[[SimulationReport], str], str | None]] = [
        ("requests (completed / rejected)", lambda r: f"{r.completed:,} / {r.rejected:,}", None),
        ("throughput (req/s)", lambda r: f"{r.throughput_rps:,.0f}", "throughput_ratio"),
        ("latency p50 / p95 / p99 (ms)", _percentiles, "p99_latency_ratio"),
        ("mean queue / device (ms)", lambda r: f"{r.mean_queue_ms:.3f} / {r.mean_device_ms:.3f}", None),
        ("batches (mean size)", lambda r: f"{r.batches:,} ({r.mean_batch:.1f})", None),
        ("utilisation", lambda r: f"{r.utilisation:.1%}", None),
        ("$ per 1,000 requests", lambda r: usd(r.usd_per_1k), "usd_per_1k_ratio"),
        ("J per 1,000 requests", lambda r: f"{r.joules_per_1k:,.2f}", "joules_per_1k_ratio"),
        ("simulated in (wall s)", lambda r: f"{r.wall_seconds:.2f}", None),
    ]  # fmt: skip
    for label, value, ratio in rows:
        extra = [f"{ratios[ratio]:.2f}x" if ratio and ratios and ratio in ratios else ""] if ratios else []
        table.add_row(label, *(value(report) for report in reports), *extra)
    return table


def _write_outputs(report: SimulationReport, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{report.profile.replace(':', 'x')}-{report.workload}"
    files = {
        out / f"{stem}.json": report.model_dump_json(indent=1),
        out / f"{stem}-utilisation.svg": utilisation_chart(report, title=f"{report.profile}: cores busy"),
        out / f"{stem}-latency-cdf.svg": latency_chart(report, title=f"{report.workload}: latency CDF"),
    }
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
    console.print(f"[dim]simulated, not measured; wrote {', '.join(cell(path) for path in written)}[/dim]")


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
    model: str = typer.Option(
        "minilm",
        "--model",
        help="An LLM of the catalogue (llama-3.1-70b, ...) with --sessions-per-s; else minilm, "
        "minilm-int8, mlp-WIDTHxLAYERS or an .onnx path with --rps.",
    ),
    rps: float | None = typer.Option(None, "--rps", help="Encoder models: target requests/s for the whole fleet."),
    p99_ms: float | None = typer.Option(None, "--p99-ms", help="Encoder models: p99 latency target in ms."),
    sessions_per_s: float | None = typer.Option(None, "--sessions-per-s", help="LLMs: agent sessions per second."),
    turns: int = typer.Option(1, "--turns", help="LLMs: model calls per session."),
    input_tokens: int = typer.Option(2000, "--input-tokens", help="LLMs: prompt tokens per call (history included)."),
    output_tokens: int = typer.Option(300, "--output-tokens", help="LLMs: completion tokens per call."),
    ttft_p99_ms: float = typer.Option(2000.0, "--ttft-p99-ms", help="LLMs: p99 time-to-first-token target."),
    tpot_p99_ms: float = typer.Option(50.0, "--tpot-p99-ms", help="LLMs: p99 time-per-output-token target."),
    unit: str = typer.Option("trn3", "--unit", help="The unit the fleet is built from: a chip or a system profile."),
    seq: int = typer.Option(128, "--seq", help="Encoder models: tokens per request."),
    precision: str = typer.Option("bf16", "--precision", help="fp32, bf16, fp8 or fp4 (LLMs default to fp8)."),
    max_batch: int = typer.Option(32, "--max-batch", help="Encoder models: largest dynamic batch."),
    max_delay_ms: float = typer.Option(2.0, "--max-delay-ms", help="Dynamic batching: longest wait to fill a batch."),
    llm_files: list[Path] = LLMS_OPTION,
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Chips for a load at a latency target: --rps/--p99-ms (encoders) or --sessions-per-s (LLMs, p99 TTFT/TPOT)."""
    if sessions_per_s is not None:
        precisions = ("fp8",) if precision == "bf16" else (precision,)
        question = dict(model=model, sessions_per_s=sessions_per_s, ttft_p99_ms=ttft_p99_ms, tpot_p99_ms=tpot_p99_ms,
                        session={"turns": turns, "input_tokens": input_tokens, "output_tokens": output_tokens},
                        precisions=precisions)  # fmt: skip
        _llm_capacity(question, unit, llm_files, paths, settings, as_json)
        return
    if rps is None or p99_ms is None:
        fail("give --rps and --p99-ms (encoder models) or --sessions-per-s (LLMs)", 2)
    try:
        simulator = Simulator(unit, catalog=_catalog(paths, settings))
        encoder = CapacityQuestion(
            model=model, target_rps=rps, p99_ms=p99_ms, seq=seq, precision=precision, max_batch=max_batch,
            max_delay_ms=max_delay_ms,
        )  # fmt: skip
        with console.status("bisecting the per-unit load") if not as_json else nullcontext():
            plan = plan_capacity(encoder, simulator.profile, simulator.service)
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


def _llm_capacity(
    question: dict[str, Any], unit: str, llm_files: list[Path], paths: list[Path], settings: list[str], as_json: bool
) -> None:
    try:
        chip = _catalog(paths, settings).profile(unit).chip
        asked = LLMCapacityQuestion.model_validate(question)
        with console.status("simulating candidate layouts") if not as_json else nullcontext():
            plan = plan_llm_capacity(asked, chip, load_llms(llm_files))
    except ValidationError as error:
        fail(error, 2)
    except WorkloadError as error:  # no layout meets the targets: the check failed
        fail(error, 1)
    except AgentCoreError as error:
        fail(error, 2)
    if as_json:
        _emit(plan)
        return
    table = Table("layout", "replica chips", "req/s per replica", "p99 TTFT ms", "p99 TPOT ms", "replicas", "chips",
                  "$/h", "$/session", title=f"{cell(plan.model)} on {cell(chip.name)} (simulated)")  # fmt: skip
    for row in plan.candidates:
        layout = row.layout
        table.add_row(
            f"tp{layout.tp}/pp{layout.pp}/b{layout.max_batch}/{layout.precision}", str(row.replica_chips),
            f"{row.per_replica_rps:,.2f}", f"{row.ttft_p99_ms:,.0f}", f"{row.tpot_p99_ms:,.1f}", f"{row.replicas:,}",
            f"{row.chips:,}", f"{row.usd_per_hour:,.2f}", usd(row.usd_per_session),
        )  # fmt: skip
    console.print(table)
    console.print(f"[dim]simulated: {plan.probes} one-replica runs; {len(plan.rejected)} layouts ruled out[/dim]")


def _cards(
    model: str, devices: list[str], shape: tuple[int, int], precision: str | None, llm_files: list[Path],
    paths: list[Path], settings: list[str],
) -> dict[str, RateCard]:  # fmt: skip
    return rate_cards(load_llms(llm_files), _catalog(paths, settings), model, devices, precision=precision, shape=shape)


@app.command("llm-cost")
def llm_cost(
    model: str = typer.Option("llama-3.1-70b", "--model", help="An LLM of the catalogue (see --llms for your own)."),
    devices: list[str] = typer.Option(
        ["trn2", "trn3", "h100"], "--device", help="Chips or systems to price on (repeatable)."
    ),
    input_tokens: int = typer.Option(2000, "--input-tokens", help="Prompt tokens per call (history included)."),
    output_tokens: int = typer.Option(300, "--output-tokens", help="Completion tokens per call."),
    precision: str | None = typer.Option(None, "--precision", help="bf16, fp8 or fp4 (default: fp8 where supported)."),
    llm_files: list[Path] = LLMS_OPTION,
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Simulated $ and joules per million input/output tokens of MODEL on each device, at saturation."""
    try:
        cards = _cards(model, devices, (input_tokens, output_tokens), precision, llm_files, paths, settings)
    except (AgentCoreError, ValidationError) as error:
        fail(error, 2)
    if as_json:
        _emit({"simulated": True, "cards": {device: card.model_dump(mode="json") for device, card in cards.items()}})
        return
    table = Table("device", "layout", "batch", "$/M in", "$/M out", "J/out token", "$/call",
                  title=f"{cell(model)}, {input_tokens} in / {output_tokens} out per call (simulated)")  # fmt: skip
    for device, card in cards.items():
        layout = card.layout
        table.add_row(
            cell(device) + (" [yellow](projected)[/yellow]" if card.projected else ""),
            f"tp{layout.tp} pp{layout.pp} {layout.precision}", str(card.batch),
            f"{card.usd_per_million_input:.4f}", f"{card.usd_per_million_output:.4f}",
            f"{card.joules_per_output_token:.3f}", usd(card.price(input_tokens, output_tokens).usd),
        )  # fmt: skip
    console.print(table)


@app.command("validate")
def validate(
    llm_files: list[Path] = LLMS_OPTION,
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The LLM serving model against published results and AWS's Trn3-vs-Trn2 claims (simulated)."""
    try:
        catalog, llms = _catalog(paths, settings), load_llms(llm_files)
        rows, claims = validation_table(catalog, llms), trn3_claims(catalog, llms)
    except (AgentCoreError, ValidationError) as error:
        fail(error, 2)
    if as_json:
        _emit({"simulated": True, "published": [row.model_dump() for row in rows],
               "trn3_vs_trn2": [claim.model_dump() for claim in claims]})  # fmt: skip
        return
    table = Table("point", "metric", "published", "simulated", "error", "note", title="Published serving results")
    for row in rows:
        note = "known gap" if row.known_gap else "fitted" if row.fitted else "held out"
        table.add_row(f"{row.device} tp{row.tp} {row.precision} {row.model} {row.shape}", row.metric,
                      f"{row.published:,.2f}", f"{row.simulated:,.2f}", f"{row.error:+.1%}", note)  # fmt: skip
    console.print(table)
    table = Table("claim", "AWS", "simulated", "Trn3 W", "note", title="Trn3 Gen2 vs Trn2 UltraServer (Llama 3.1 70B)")
    for claim in claims:
        note = f"[yellow]{claim.note}[/yellow]" if claim.by_construction else claim.note
        table.add_row(
            claim.claim, f"{claim.published:.1f}x", f"{claim.simulated:.2f}x", f"{claim.trn3_watts:,.0f}", note
        )
    console.print(table)


@app.command("price-traces")
def price_traces(
    traces: Path = typer.Argument(..., help="Traces (.jsonl in agentcore's schema, or OTLP/JSON) with token usage."),
    device: str = typer.Option("trn3", "--device", help="The device to price on (a chip or system profile)."),
    versus: list[str] = typer.Option([], "--vs", help="Devices to compare with (repeatable), e.g. --vs h100."),
    model: str = typer.Option("llama-3.1-70b", "--model", help="The catalogue LLM every call is priced as."),
    chart: Path | None = typer.Option(None, "--chart", help="Also write an SVG chart of $ per session on --device."),
    llm_files: list[Path] = LLMS_OPTION,
    paths: list[Path] = PATHS_OPTION,
    settings: list[str] = SET_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Simulated cost of the traces' LLM calls (their token usage) per session, per tenant and in total."""
    from agentcore.evaluations.importers import load_sessions
    from agentcore.evaluations.llm_cost import price_traces

    try:
        devices = [device, *versus]
        report = price_traces(load_sessions(traces), load_llms(llm_files), _catalog(paths, settings), model, devices)
    except (AgentCoreError, ValidationError) as error:
        fail(error, 2)
    if chart is not None:
        points = [(float(index), entry.usd[device]) for index, entry in enumerate(report.sessions)]
        svg = line_chart(
            {f"{model} on {device}": points}, title=f"Simulated $ per session, {model} on {device}",
            x_label="session (index in the file)", y_label="simulated $ per session", y_format=usd,
        )  # fmt: skip
        chart.parent.mkdir(parents=True, exist_ok=True)
        chart.write_text(svg, encoding="utf-8")
    if as_json:
        _emit(report)
        return
    title = f"{len(report.sessions)} sessions priced as {cell(model)} (simulated $)"
    table = Table("tenant", *map(cell, report.devices), title=title)
    for tenant, spend in sorted(report.tenants.items()):
        table.add_row(cell(tenant), *(usd(spend[name]) for name in report.devices))
    table.add_row("[bold]total[/bold]", *(usd(report.totals[name]) for name in report.devices))
    table.add_row("per session", *(usd(report.per_session(name)) for name in report.devices))
    console.print(table)
    console.print(
        f"[dim]{report.priced_calls} calls, {report.input_tokens:,} input / {report.output_tokens:,} output tokens; "
        f"{report.unpriced_calls} calls without token usage left unpriced[/dim]"
    )


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
    database: str | None = typer.Option(None, "--database", "-d", metavar="PATH_OR_URL", help=DATABASE_HELP),
    export: Path | None = typer.Option(None, "--export", help="Also write the receipts to a .csv or .json file."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Simulated spend (dollars, joules, device-seconds) from the receipt ledger."""
    span = _window(window)  # a bad option before a missing database
    try:
        book = Ledger(existing_database(database))
        rows = book.report(by=by, tenant=tenant, user=user, agent=agent, window=span)  # type: ignore[arg-type]
        exported = book.export(export, window=span) if export else None
    except AgentCoreError as error:
        fail(error)
    if as_json:
        _emit({"rows": [row.model_dump(mode="json") for row in rows], "exported": exported})
        return
    table = Table(*by, "calls", "items", "$", "energy", "device time", title="simulated spend")
    for row in rows:
        table.add_row(
            *(cell(row.group[key]) for key in by), f"{row.calls:,}", f"{row.items:,}", usd(row.usd),
            joules(row.joules), seconds(row.device_seconds),
        )  # fmt: skip
    console.print(table)
    if exported is not None:
        console.print(f"exported {exported} receipts to {cell(export)}")
