"""``agentcore eval``: run evaluation suites in CI, compare two agent versions, and list the evaluators.

Exit codes of ``run`` and ``compare``: 0 every gate met, 1 a gate failed, 2 bad input (suite, traces, baseline).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from agentcore.cli.output import cell, errors, fail, json_text, progress

if TYPE_CHECKING:
    from agentcore.evaluations.llm_cost import TraceCost
    from agentcore.evaluations.pairwise import Comparison
    from agentcore.evaluations.trace import Session

app = typer.Typer(help="Evaluate agent traces: run suites with CI gates, list the evaluators.", no_args_is_help=True)

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_LLM, DEFAULT_DEVICE = "llama-3.1-70b", "trn3"  # what LLM calls are priced as when not told otherwise
AS_JSON = typer.Option(False, "--json", help="Print the JSON report on stdout instead of the table.")


@app.command("run")
def run(
    suite: Path = typer.Argument(..., help="Suite file (TOML) naming trace sources, evaluators and thresholds."),
    junit: Path | None = typer.Option(None, "--junit", help="Write a JUnit XML report here."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Append a Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY)."
    ),
    json_report: Path | None = typer.Option(
        None, "--report", metavar="PATH", help="Write the JSON report here (usable as a later --baseline)."
    ),
    baseline: Path | None = typer.Option(
        None, "--baseline", help="Earlier JSON report to compare against (overrides the suite's)."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Re-score everything instead of reusing cached results."),
    backend: str | None = typer.Option(
        None, "--backend", help="Where model batches run: local or ray (default: [accel] backend, else local)."
    ),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (default: a local Ray instance)."),
    price_model: str = typer.Option(
        DEFAULT_LLM, "--price-model", help="The catalogue LLM the traces' LLM calls are priced as (simulated)."
    ),
    price_device: str = typer.Option(DEFAULT_DEVICE, "--price-device", help="The device to price LLM calls on."),
    price_vs: list[str] = typer.Option(
        [], "--price-vs", help="More devices to price them on (repeatable), e.g. --price-vs trn2 --price-vs h100."
    ),
    as_json: bool = AS_JSON,
) -> None:
    """Run SUITE; exit 0 when every threshold is met, 1 when one fails, 2 on bad input."""
    from agentcore.accel.runtime import Accelerator
    from agentcore.errors import AgentCoreError
    from agentcore.evaluations.api import EvaluationSuite
    from agentcore.evaluations.outcome import RunTiming
    from agentcore.evaluations.reports import render_html, render_json, render_junit, render_markdown

    if backend not in (None, "local", "ray"):
        fail(f"unknown backend {backend!r}; choose local or ray", EXIT_BAD_INPUT)
    try:
        accelerator = Accelerator(backend=backend, address=address) if backend or address else None  # type: ignore[arg-type]
        runner = EvaluationSuite.from_file(suite, accelerator=accelerator)
        llm_cost = _llm_cost(runner.suite.sessions(), price_model, [price_device, *price_vs])
        started = datetime.now(UTC)
        with progress("evaluating", len(runner.evaluators)) as update:
            outcome = runner.run(baseline=baseline, cache=not no_cache, progress=lambda done, total: update(done, None))
        finished = datetime.now(UTC)
    except AgentCoreError as error:
        fail(error, EXIT_BAD_INPUT)
    timing = RunTiming(started_at=started, finished_at=finished, duration_s=(finished - started).total_seconds())
    outcome = outcome.model_copy(update={"timing": timing, "llm_cost": llm_cost})
    for path, render, mode in (
        (json_report, render_json, "w"),
        (junit, render_junit, "w"),
        (markdown, render_markdown, "a"),  # a CI step summary collects every step's report
        (html, render_html, "w"),
    ):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open(mode, encoding="utf-8") as handle:
                handle.write(render(outcome))
    if as_json:
        typer.echo(render_json(outcome, ascii_only=True))
        raise typer.Exit(EXIT_PASSED if outcome.passed else EXIT_FAILED)
    table = Table(title=f"{cell(outcome.suite)}: {'passed' if outcome.passed else 'FAILED'}")
    for column in ("evaluator", "level", "judged", "coverage", "mean", "pass rate", "gates"):
        table.add_column(column)
    for summary in outcome.summaries:
        gates = ", ".join(f"{'ok' if c.passed else 'FAIL'} {c.name} {c.threshold:g}" for c in summary.checks)
        table.add_row(
            cell(summary.evaluator),
            summary.level.value,
            str(summary.count),
            f"{summary.coverage:.0%}",
            f"{summary.mean:.3f}",
            f"{summary.pass_rate:.0%}",
            cell(gates),
        )
    Console().print(table)
    if llm_cost is not None and llm_cost.priced_calls:
        spent = ", ".join(f"${llm_cost.totals[device]:.4f} on {cell(device)}" for device in llm_cost.devices)
        errors.print(
            f"LLM calls in these traces: {llm_cost.priced_calls} with {llm_cost.input_tokens:,} input / "
            f"{llm_cost.output_tokens:,} output tokens, simulated {spent} as {cell(llm_cost.model)} (in the reports)",
            soft_wrap=True,
        )
    raise typer.Exit(EXIT_PASSED if outcome.passed else EXIT_FAILED)


def _llm_cost(sessions: list[Session], model: str, devices: list[str]) -> TraceCost | None:
    """The traces' LLM calls priced as ``model`` on ``devices`` (simulated); None when the traces have no LLM call."""
    from agentcore.accel.serving.catalogue import load_llms
    from agentcore.accel.sim.config import load_config
    from agentcore.evaluations.llm_cost import price_traces

    if not any(session.model_calls for session in sessions):
        return None
    return price_traces(sessions, load_llms(), load_config().catalog(), model, list(dict.fromkeys(devices)))


def _loss(item: str) -> tuple[str, float]:
    """``EVALUATOR=SHARE`` of ``--max-loss``."""
    name, _, value = item.rpartition("=")
    try:
        if name:
            return name, float(value)
    except ValueError:
        pass
    fail(f"--max-loss takes EVALUATOR=SHARE (e.g. Builtin.Helpfulness=0.05), got {item!r}", EXIT_BAD_INPUT)


@app.command("compare")
def compare(
    suite: Path = typer.Argument(..., help="Suite file whose session and turn evaluators (and max_loss gates) apply."),
    a: Path = typer.Option(..., "--a", help="Traces of version A: a trace file or a folder of them (the baseline)."),
    b: Path = typer.Option(..., "--b", help="Traces of version B over the same sessions (the candidate)."),
    max_loss: list[str] = typer.Option(
        [], "--max-loss", metavar="EVALUATOR=SHARE", help="Gate: B may lose at most this share of pairs net."
    ),
    tie_margin: float = typer.Option(0.0, "--tie-margin", help="Score difference that still counts as a tie."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Append a Markdown summary to this file."),
    json_report: Path | None = typer.Option(None, "--report", metavar="PATH", help="Write the JSON comparison here."),
    as_json: bool = AS_JSON,
) -> None:
    """Compare versions A and B pair by pair: win rates with 95% intervals; exit 1 when a max_loss gate fails."""
    from agentcore.errors import AgentCoreError
    from agentcore.evaluations.api import EvaluationSuite
    from agentcore.evaluations.pairwise import render_comparison_markdown

    try:
        runner = EvaluationSuite.from_file(suite)
        comparison = runner.compare(a, b, tie_margin=tie_margin, max_loss=dict(map(_loss, max_loss)))
    except AgentCoreError as error:
        fail(error, EXIT_BAD_INPUT)
    if json_report is not None:
        json_report.parent.mkdir(parents=True, exist_ok=True)
        json_report.write_text(comparison.model_dump_json(indent=1), encoding="utf-8")
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        with markdown.open("a", encoding="utf-8") as handle:
            handle.write(render_comparison_markdown(comparison, title=f"{runner.suite.suite.name}: {b} vs {a}"))
    _explain_unpaired(comparison)
    if as_json:
        typer.echo(json_text(comparison))
        raise typer.Exit(EXIT_PASSED if comparison.passed else EXIT_FAILED)
    table = Table(title=f"{cell(b)} vs {cell(a)}: {'passed' if comparison.passed else 'FAILED'}")
    for column in ("evaluator", "pairs", "B wins", "ties", "A wins", "B win rate (95% CI)", "errors", "gates"):
        table.add_column(column)
    for summary in comparison.summaries:
        table.add_row(
            cell(summary.evaluator),
            str(summary.pairs),
            str(summary.wins_b),
            str(summary.ties),
            str(summary.wins_a),
            f"{summary.win_rate_b:.0%} ({summary.ci_low:.0%}–{summary.ci_high:.0%})",
            str(summary.errors),
            cell(", ".join(f"{'ok' if c.passed else 'FAIL'} {c.name} {c.threshold:g}" for c in summary.checks)),
        )
    Console().print(table)
    raise typer.Exit(EXIT_PASSED if comparison.passed else EXIT_FAILED)


def _explain_unpaired(comparison: Comparison) -> None:
    """Say on stderr what the comparison could not pair: each of these fails it (B cannot win by skipping)."""
    from agentcore.text import printable

    if comparison.unmatched_a:
        shown = ", ".join(printable(session) for session in comparison.unmatched_a[:5])
        more = f" and {len(comparison.unmatched_a) - 5} more" if len(comparison.unmatched_a) > 5 else ""
        errors.print(
            f"FAIL unmatched_a: {len(comparison.unmatched_a)} sessions of A are missing in B ({shown}{more}); "
            "run B over every session A ran",
            markup=False,
            soft_wrap=True,
        )
    for summary in comparison.summaries:
        if summary.errors:
            errors.print(
                f"FAIL errors: {summary.evaluator} could not judge {summary.errors} pairs (an error result on "
                "either side: a failed judge, a score that is no number); fix it and compare again",
                markup=False,
                soft_wrap=True,
            )
        if summary.missing_b:
            errors.print(
                f"FAIL missing_in_b: {summary.evaluator} has no result in B for {summary.missing_b} of A's turns "
                "in shared sessions (B's session has fewer turns, or repeats a turn id)",
                markup=False,
                soft_wrap=True,
            )


@app.command("list")
def list_evaluators(as_json: bool = typer.Option(False, "--json", help="Print JSON lines instead of a table.")) -> None:
    """List every evaluator: id, level, label scale and what it measures."""

    from agentcore.evaluations.registry import evaluator_classes

    if as_json:
        for evaluator_id, factory in evaluator_classes().items():
            evaluator = factory()
            row = {"id": evaluator_id, "level": evaluator.level.value, "scale": evaluator.scale.describe()}
            typer.echo(json_text({**row, "measures": evaluator.description}))
        return

    table = Table(title="Evaluators")
    for column in ("id", "level", "scale", "measures"):
        table.add_column(column)
    for evaluator_id, factory in evaluator_classes().items():
        evaluator = factory()
        shown = (evaluator_id, evaluator.level.value, evaluator.scale.describe(), evaluator.description)
        table.add_row(*map(cell, shown))
    Console(width=200).print(table)
