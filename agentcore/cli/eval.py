"""``agentcore eval``: run evaluation suites in CI and list the evaluators.

Exit codes of ``run``: 0 every threshold met, 1 a threshold failed, 2 bad input (suite, traces, baseline).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from agentcore.cli.output import fail

app = typer.Typer(help="Evaluate agent traces: run suites with CI gates, list the evaluators.", no_args_is_help=True)

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


@app.command("run")
def run(
    suite: Path = typer.Argument(..., help="Suite file (TOML) naming trace sources, evaluators and thresholds."),
    junit: Path | None = typer.Option(None, "--junit", help="Write a JUnit XML report here."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="Append a Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY)."
    ),
    json_report: Path | None = typer.Option(
        None, "--json", help="Write the JSON report here (usable as a later --baseline)."
    ),
    baseline: Path | None = typer.Option(
        None, "--baseline", help="Earlier JSON report to compare against (overrides the suite's)."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Re-score everything instead of reusing cached results."),
    backend: str | None = typer.Option(
        None, "--backend", help="Where model batches run: local or ray (default: [accel] backend, else local)."
    ),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (default: a local Ray instance)."),
) -> None:
    """Run SUITE; exit 0 when every threshold is met, 1 when one fails, 2 on bad input."""
    from agentcore.accel.runtime import Accelerator
    from agentcore.errors import AgentCoreError
    from agentcore.evaluations.api import EvaluationSuite
    from agentcore.evaluations.reports import render_html, render_json, render_junit, render_markdown

    console = Console(stderr=True)
    if backend not in (None, "local", "ray"):
        fail(f"unknown backend {backend!r}; choose local or ray", EXIT_BAD_INPUT)
    try:
        accelerator = Accelerator(backend=backend, address=address) if backend or address else None  # type: ignore[arg-type]
        runner = EvaluationSuite.from_file(suite, accelerator=accelerator)
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("evaluating", total=len(runner.evaluators))
            outcome = runner.run(
                baseline=baseline, cache=not no_cache, progress=lambda done, total: bar.update(task, completed=done)
            )
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
    raise typer.Exit(EXIT_PASSED if outcome.passed else EXIT_FAILED)


@app.command("list")
def list_evaluators() -> None:
    """List every evaluator: id, level, label scale and what it measures."""
    from agentcore.evaluations.registry import evaluator_classes

    table = Table(title="Evaluators")
    for column in ("id", "level", "scale", "measures"):
        table.add_column(column)
    for evaluator_id, factory in evaluator_classes().items():
        evaluator = factory()
        table.add_row(evaluator_id, evaluator.level.value, evaluator.scale.describe(), evaluator.description)
    Console(width=200).print(table)
