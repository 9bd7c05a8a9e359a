"""``agentcore eval``: run evaluation suites in CI, compare two agent versions, and list the evaluators.

Exit codes of ``run`` and ``compare``: 0 every gate met, 1 a gate failed, 2 bad input (suite, traces, baseline).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from agentcore.cli.output import errors, fail, progress

if TYPE_CHECKING:
    from agentcore.evaluations.trace import Session

app = typer.Typer(help="Evaluate agent traces: run suites with CI gates, list the evaluators.", no_args_is_help=True)

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
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
    as_json: bool = AS_JSON,
) -> None:
    """Run SUITE; exit 0 when every threshold is met, 1 when one fails, 2 on bad input."""
    from agentcore.accel.runtime import Accelerator
    from agentcore.errors import AgentCoreError
    from agentcore.evaluations.api import EvaluationSuite
    from agentcore.evaluations.reports import render_html, render_json, render_junit, render_markdown

    if backend not in (None, "local", "ray"):
        fail(f"unknown backend {backend!r}; choose local or ray", EXIT_BAD_INPUT)
    try:
        accelerator = Accelerator(backend=backend, address=address) if backend or address else None  # type: ignore[arg-type]
        runner = EvaluationSuite.from_file(suite, accelerator=accelerator)
        with progress("evaluating", len(runner.evaluators)) as update:
            outcome = runner.run(baseline=baseline, cache=not no_cache, progress=lambda done, total: update(done, None))
    except AgentCoreError as error:
        fail(error, EXIT_BAD_INPUT)
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
        typer.echo(render_json(outcome))
        raise typer.Exit(EXIT_PASSED if outcome.passed else EXIT_FAILED)
    table = Table(title=f"{outcome.suite}: {'passed' if outcome.passed else 'FAILED'}")
    for column in ("evaluator", "level", "judged", "coverage", "mean", "pass rate", "gates"):
        table.add_column(column)
    for summary in outcome.summaries:
        gates = ", ".join(f"{'ok' if c.passed else 'FAIL'} {c.name} {c.threshold:g}" for c in summary.checks)
        table.add_row(
            summary.evaluator,
            summary.level.value,
            str(summary.count),
            f"{summary.coverage:.0%}",
            f"{summary.mean:.3f}",
            f"{summary.pass_rate:.0%}",
            gates,
        )
    Console().print(table)
    _llm_spend(runner.suite.sessions(), errors)
    raise typer.Exit(EXIT_PASSED if outcome.passed else EXIT_FAILED)


def _llm_spend(sessions: list[Session], console: Console, model: str = "llama-3.1-70b", device: str = "trn3") -> None:
    """One line: the traces' LLM token usage priced as ``model`` on ``device`` (simulated), when they carry any."""
    from agentcore.accel.serving.pricing import DEFAULT_SHAPE, card_for
    from agentcore.accel.serving.usage import shipped_catalogues
    from agentcore.evaluations.llm_cost import mean_call_shape, price_sessions

    if not any(call.input_tokens or call.output_tokens for session in sessions for call in session.model_calls):
        return
    profiles, llms = shipped_catalogues()
    shape = mean_call_shape(sessions, DEFAULT_SHAPE)
    cost = price_sessions(sessions, {device: card_for(llms, profiles.chips[device], model, shape=shape)})
    console.print(
        f"LLM calls in these traces: {cost.priced_calls} with {cost.input_tokens:,} input / {cost.output_tokens:,} "
        f"output tokens, simulated ${cost.totals[device]:.4f} as {model} on {device} "
        f"(agentcore accel price-traces compares devices)",
        soft_wrap=True,
    )


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
    if as_json:
        typer.echo(comparison.model_dump_json())
        raise typer.Exit(EXIT_PASSED if comparison.passed else EXIT_FAILED)
    table = Table(title=f"{b} vs {a}: {'passed' if comparison.passed else 'FAILED'}")
    for column in ("evaluator", "pairs", "B wins", "ties", "A wins", "B win rate (95% CI)", "gates"):
        table.add_column(column)
    for summary in comparison.summaries:
        table.add_row(
            summary.evaluator,
            str(summary.pairs),
            str(summary.wins_b),
            str(summary.ties),
            str(summary.wins_a),
            f"{summary.win_rate_b:.0%} ({summary.ci_low:.0%}–{summary.ci_high:.0%})",
            ", ".join(f"{'ok' if c.passed else 'FAIL'} {c.name} {c.threshold:g}" for c in summary.checks),
        )
    Console().print(table)
    raise typer.Exit(EXIT_PASSED if comparison.passed else EXIT_FAILED)


@app.command("list")
def list_evaluators(as_json: bool = typer.Option(False, "--json", help="Print JSON lines instead of a table.")) -> None:
    """List every evaluator: id, level, label scale and what it measures."""
    import json

    from agentcore.evaluations.registry import evaluator_classes

    if as_json:
        for evaluator_id, factory in evaluator_classes().items():
            evaluator = factory()
            row = {"id": evaluator_id, "level": evaluator.level.value, "scale": evaluator.scale.describe()}
            typer.echo(json.dumps({**row, "measures": evaluator.description}))
        return

    table = Table(title="Evaluators")
    for column in ("id", "level", "scale", "measures"):
        table.add_column(column)
    for evaluator_id, factory in evaluator_classes().items():
        evaluator = factory()
        table.add_row(evaluator_id, evaluator.level.value, evaluator.scale.describe(), evaluator.description)
    Console(width=200).print(table)
