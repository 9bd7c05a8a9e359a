"""The CLI reference page, generated from the command tree itself so it can never drift from the code."""

from __future__ import annotations

from typing import Any

import typer


def _lines(command: Any, path: list[str]) -> list[str]:
    # typer vendors its own click, so commands and parameters are inspected by duck typing.
    name = " ".join(path)
    out = [f"{'#' * min(len(path) + 1, 4)} `{name}`", ""]
    help_text = (command.help or command.short_help or "").strip()
    if help_text:
        out += [help_text.split("\n\n")[0].replace("\n", " "), ""]
    context = command.make_context(path[-1], [], resilient_parsing=True)
    usage = " ".join(command.collect_usage_pieces(context))
    out += ["```", f"{name} {usage}".rstrip(), "```", ""]
    params = [p for p in command.params if not getattr(p, "hidden", False)]
    if params:
        out += ["| argument / option | description |", "| --- | --- |"]
        for param in params:
            is_option = param.param_type_name == "option"
            names = ", ".join(f"`{n}`" for n in param.opts) if is_option else f"`{param.name.upper()}`"
            description = (getattr(param, "help", None) or "").replace("|", "\\|").replace("\n", " ")
            out.append(f"| {names} | {description} |")
        out.append("")
    if hasattr(command, "list_commands"):
        for sub_name in sorted(command.list_commands(context)):
            sub = command.get_command(context, sub_name)
            if sub is not None and not sub.hidden:
                out += _lines(sub, [*path, sub_name])
    return out


def render(app: typer.Typer) -> str:
    """Markdown for every command of ``app``: its help, usage line and options."""
    root = typer.main.get_command(app)
    header = [
        "# CLI reference",
        "",
        "Generated from the command tree by `python -m agentcore.cli.reference > docs/cli.md`; a test fails when",
        "this page and the code disagree. Every command also answers `--help`.",
        "",
        "**Exit codes**, the same for every command: `0` success; `1` a check, gate or verification failed (policy",
        "findings, a failing policy test or evaluation gate, a broken audit chain, a corrupt model); `2` a usage or",
        "input error (unknown option, profile or workload, a file that does not load).",
        "",
        "**Output**: every command that prints data takes `--json` (JSON lines, or one JSON object) for scripts.",
        "Text that agents, tools, traces or users wrote (memories, ids, names, paths, arguments) is shown as written:",
        "never read as markup, each non-printable character (newline, escape, bidi override) as its escape (`\\x1b`,",
        "`\\u202e`), and a character the terminal's encoding lacks as a backslash escape. `--json` and",
        "`gateway audit export` print exact data as ASCII JSON (every non-ASCII character as `\\uXXXX`).",
        "",
        "**Database**: commands that read or write agentcore's database use `--database PATH_OR_URL` when given, else",
        "the `database` of the nearest `agentcore.toml` (or `[tool.agentcore]` in `pyproject.toml`) in the working",
        "directory or above it, else `$AGENTCORE_DATABASE_URL`, else `.agentcore/agentcore.db`.",
        "",
    ]
    return "\n".join(header + _lines(root, ["agentcore"])).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    from agentcore.cli import app

    sys.stdout.write(render(app))
