"""``agentcore policy``: check, explain, format, test and export policy bundles.

Exit codes for CI: 0 success; 1 findings with errors (or warnings under ``--strict``), failing policy tests or
unformatted files under ``fmt --check``; 2 the policies or inputs do not load (syntax, compile, file errors).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from pydantic import ValidationError

from agentcore.cli.output import fail, json_flag, json_text
from agentcore.policies import PolicyEngine, PolicyError, Request
from agentcore.policies.cedar import CedarExportError
from agentcore.policies.cedar import export as export_cedar
from agentcore.policies.checker import check as check_bundle
from agentcore.policies.engine import parse_sources, read_sources
from agentcore.policies.errors import PolicyRequestError
from agentcore.policies.formatter import DEFAULT_WIDTH, format_file
from agentcore.policies.located import located
from agentcore.policies.parser import parse
from agentcore.policies.schemas import load_tools
from agentcore.policies.testing import TEST_SUFFIX, junit_xml, run_tests
from agentcore.text import printable

app = typer.Typer(help="Check, explain, format, test and export policy bundles.", no_args_is_help=True)

PATHS = typer.Argument(..., help="Policy and schema files or directories (searched for *.policy and *.schema).")


@app.command()
def check(
    paths: list[Path] = PATHS,
    tools: Path | None = typer.Option(None, "--tools", help="Tool schemas (OpenAI function-calling or MCP JSON)."),
    strict: bool = typer.Option(False, "--strict", help="Fail (exit 1) on warnings too."),
    as_json: bool = typer.Option(False, "--json", help="Print findings as JSON lines."),
) -> None:
    """Parse, compile and analyse a bundle; report unknown tools/arguments, type errors, dead and shadowed rules."""
    try:
        sources = read_sources(paths)
        engine = PolicyEngine.from_sources(sources)
        findings = check_bundle(engine.files, load_tools(tools) if tools else None)
    except (PolicyError, PolicyRequestError, OSError) as error:
        fail(error, 2)
    for finding in findings:
        typer.echo(json_text(finding) if as_json else finding.render())
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    rules = sum(len(f.rules) for f in engine.files)
    if not as_json:
        typer.echo(f"{len(sources)} files, {rules} rules: {errors} errors, {warnings} warnings")
    if errors or (strict and warnings):
        raise typer.Exit(1)


@app.command()
def explain(
    paths: list[Path] = PATHS,
    request: Path = typer.Option(..., "--request", help="JSON file with one request (principal, action, args, ...)."),
    as_json: bool = json_flag("the decision and the conditions' values as one JSON object"),
) -> None:
    """Decide one request and show the effect, the determining rules and every evaluated condition's value.

    No call history, resolvers or detectors are available here, so stateful conditions fail closed.
    """
    try:
        engine = PolicyEngine.from_sources(read_sources(paths))
        text = request.read_text(encoding="utf-8")
        parsed = Request.model_validate_json(text)
    except ValidationError as error:
        fail(f"invalid request:\n{located(error, text, str(request))}", 2)
    except (PolicyError, OSError, ValueError) as error:
        fail(error, 2)
    decision, trace = engine.explain(parsed)
    if as_json:
        conditions = [{"condition": text, "value": value} for text, value in trace]
        typer.echo(json_text({"decision": decision.model_dump(mode="json"), "conditions": conditions}))
        return
    typer.echo(f"effect: {decision.effect.value}")
    for reason in decision.reasons:
        note = f"  ({reason.note})" if reason.note else ""
        typer.echo(printable(f"  because {reason.file}:{reason.line} [{reason.rule_id}] {reason.text}{note}"))
    for reason in decision.monitored:
        typer.echo(printable(f"  monitored {reason.file}:{reason.line} [{reason.rule_id}] {reason.text}"))
    if decision.would_effect is not None:
        typer.echo(f"would be, with monitored rules enforced: {decision.would_effect.value}")
    typer.echo("conditions:")
    for text, value in trace:
        typer.echo(printable(f"  {text} -> {json.dumps(value) if isinstance(value, bool) else value}"))


@app.command()
def fmt(
    paths: list[Path] = PATHS,
    check_only: bool = typer.Option(False, "--check", help="Exit 1 if a file is not formatted; change nothing."),
    width: int = typer.Option(
        DEFAULT_WIDTH, "--width", min=20, metavar="N", help="Wrap statements longer than N columns."
    ),
) -> None:
    """Rewrite policy files in canonical form, keeping blank lines and comments (idempotent; meaning never changes)."""
    try:
        sources = read_sources(paths)
        parse_sources(sources)
    except (PolicyError, OSError) as error:
        fail(error, 2)
    changed = []
    for path, text in sources.items():
        formatted = format_file(parse(text, path), width)
        if formatted != text:
            changed.append(path)
            if not check_only:
                Path(path).write_text(formatted, encoding="utf-8")
    for path in changed:
        typer.echo(f"{'would reformat' if check_only else 'reformatted'} {printable(str(path))}")
    if check_only and changed:
        raise typer.Exit(1)


@app.command("test")
def test_policies(
    paths: list[Path] = PATHS,
    tests: list[Path] = typer.Option([], "--tests", help=f"Test files (default: *{TEST_SUFFIX} next to the policies)."),
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML here."),
    as_json: bool = json_flag("one JSON line per case"),
) -> None:
    """Run policy test files (requests with expected effects); exit 1 if any case fails."""
    try:
        engine = PolicyEngine.from_sources(read_sources(paths))
        found = tests or sorted(
            {t for p in paths for t in (p.rglob(f"*{TEST_SUFFIX}") if p.is_dir() else p.parent.glob(f"*{TEST_SUFFIX}"))}
        )
        if not found:
            raise PolicyRequestError(f"no *{TEST_SUFFIX} files found next to the policies; pass --tests")
        results = run_tests(engine, found)
    except (PolicyError, PolicyRequestError, OSError) as error:
        fail(error, 2)
    for result in results:
        if as_json:
            typer.echo(json_text(result))
        elif not result.passed:
            typer.echo(printable(f"FAIL {result.file} :: {result.name}: {result.message}"))
    failed = sum(not r.passed for r in results)
    if not as_json:
        typer.echo(f"{len(results) - failed} passed, {failed} failed")
    if junit is not None:
        junit.write_text(junit_xml(results), encoding="utf-8")
    if failed:
        raise typer.Exit(1)


@app.command()
def export(
    paths: list[Path] = PATHS,
    cedar: bool = typer.Option(False, "--cedar", help="Export to Cedar (the only format so far)."),
    tools: Path | None = typer.Option(None, "--tools", help="Tool schemas, to expand glob patterns like crm.*."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the Cedar policies here (default stdout)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 if any rule is left out, even an allow rule."),
    lossy: bool = typer.Option(
        False, "--lossy", help="Write the export even if Cedar then allows more; each loss is a comment and on stderr."
    ),
) -> None:
    """Export the bundle as Cedar, never more permissive than the bundle (unless --lossy).

    Allow and monitor rules Cedar cannot express are left out (Cedar then allows less) and listed. A deny,
    approval, limit, redact or suppress rule it cannot express makes the export refuse: exit 1, nothing written,
    each such rule listed with its file and line. With --lossy such rules are left out too, each listed as a
    `// LOSSY` comment at the top of the output and on stderr.
    """
    if not cedar:
        fail("choose a format: --cedar", 2)
    try:
        engine = PolicyEngine.from_sources(read_sources(paths))
        names = sorted(load_tools(tools)) if tools else None
    except (PolicyError, PolicyRequestError, OSError) as error:
        fail(error, 2)
    exported = export_cedar(engine.files, names)
    try:
        text = exported.lossy_text if lossy else exported.text
    except CedarExportError as error:
        count = len(error.problems)
        fail(
            f"{error}\n{count} {'rule' if count == 1 else 'rules'} cannot be exported to Cedar; nothing was written", 1
        )
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
    for skipped in exported.skipped:
        where = f"{skipped.file}:{skipped.line}: left out [{skipped.rule_id}]"
        effect = "so Cedar allows less" if skipped.safe else "LOSSY: so Cedar allows more"
        typer.echo(printable(f"{where} ({effect}): {skipped.why}"), err=True)
    if strict and exported.skipped:
        raise typer.Exit(1)
