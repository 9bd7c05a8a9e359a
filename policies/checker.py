"""``agentcore policy check``: findings about a bundle, against tool schemas when given.

Errors (exit 1): unknown tools, unknown argument paths, type mismatches, conditions that can never hold.
Warnings: rules that allow or deny everything, glob patterns matching no tool, rules shadowed by another rule
(they can never change a decision), and allow/deny rules that overlap (deny wins where both match).
Emptiness, shadowing and overlap are decided exactly with interval and set reasoning (``regions.py``); named
conditions are checked by ``named.py`` and value types against resolver declarations by ``facts.py``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from fnmatch import fnmatchcase
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentcore.policies import ast
from agentcore.policies.facts import fact_problems
from agentcore.policies.named import named_problems
from agentcore.policies.regions import (
    Region,
    contains,
    impossible_parts,
    is_empty,
    meet,
    rule_region,
    schema_constraint,
)
from agentcore.policies.schemas import ToolSchema
from agentcore.text import printable

_NUMERIC_OPS = {"gt", "ge", "lt", "le", "between", "not_between"}
_TEXT_OPS = {"starts_with", "not_starts_with", "ends_with", "not_ends_with", "matches", "not_matches"}
_JSON_TYPES = {bool: "boolean", int: "number", float: "number", str: "string", type(None): "null"}


class Finding(BaseModel):
    """One located finding, with a stable ``code`` CI can filter on."""

    model_config = ConfigDict(frozen=True)
    severity: Literal["error", "warning"]
    code: str
    message: str
    rule_id: str
    file: str
    line: int
    column: int = 1
    help: str = ""

    def render(self) -> str:
        """One line (and a help line): the file name and message quote tool, argument and file names, which are
        shown :func:`printable` so a newline in one cannot forge a finding."""
        where = f"{printable(self.file)}:{self.line}:{self.column}"
        text = f"{where}: {self.severity}[{self.code}]: {printable(self.message)}"
        return text + (f"\n  help: {printable(self.help)}" if self.help else "")


def check(files: Sequence[ast.PolicyFile], tools: dict[str, ToolSchema] | None = None) -> list[Finding]:
    """All findings for a parsed bundle, in file and line order."""
    rules = [rule for f in files for rule in f.rules]
    findings: list[Finding] = []
    for rule in rules:
        findings.extend(_rule_findings(rule, tools))
    findings.extend(_pair_findings(rules, tools))
    if tools is None:
        findings.extend(_similar_names(rules))
    findings.extend(_bundle_finding("error", p.code, p.message, p.help, p.span) for p in named_problems(files))
    for definition in (d for f in files for d in f.definitions):
        for part in impossible_parts(definition.cond):
            message, help = _impossible(part is definition.cond, f'"{definition.name}" is always false')
            findings.append(_bundle_finding("error", "impossible-condition", message, help, part.span))
    for owner, problem in fact_problems(files, tools):
        severity: Literal["error", "warning"] = "error" if problem.severity == "error" else "warning"
        if owner is None:
            findings.append(_bundle_finding(severity, problem.code, problem.message, problem.help, problem.span))
        else:
            findings.append(_finding(owner, severity, problem.code, problem.message, problem.help, problem.span))
    return sorted(findings, key=lambda f: (f.file, f.line, f.code))


def _bundle_finding(
    severity: Literal["error", "warning"], code: str, message: str, help: str, span: ast.Span | None
) -> Finding:
    """A finding about a definition or declaration rather than a rule."""
    return Finding(
        severity=severity,
        code=code,
        message=message,
        rule_id="",
        file=span.file if span else "<policy>",
        line=span.line if span else 0,
        column=span.column if span else 1,
        help=help,
    )


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (names are short, so the quadratic table is fine)."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, start=1):
        current = [i]
        for j, other in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]


def _similar_names(rules: list[ast.Rule]) -> Iterator[Finding]:
    """Without schemas, a tool name that is one slip away from another name in the bundle is probably a typo."""
    uses: dict[str, list[ast.Rule]] = {}
    for rule in rules:
        for name in rule.targets.names:
            if not any(c in name for c in "*?["):
                uses.setdefault(name, []).append(rule)
    for name, rules_using in uses.items():
        others = [other for other in uses if len(uses[other]) > len(rules_using) and _edits(name, other) <= 2]
        close = sorted(others, key=lambda other: _edits(name, other))[:1]
        if close:
            yield _finding(rules_using[0], "warning", "similar-tool-name",
                           f"`{name}` is used {len(rules_using)} time(s) but `{close[0]}` {len(uses[close[0]])} times",
                           f"did you mean `{close[0]}`? (pass --tools to check names against the schemas)",
                           rules_using[0].targets.span)  # fmt: skip


def _finding(
    rule: ast.Rule,
    severity: Literal["error", "warning"],
    code: str,
    message: str,
    help: str = "",
    span: ast.Span | None = None,
) -> Finding:
    where = span or rule.span
    return Finding(
        severity=severity,
        code=code,
        message=message,
        rule_id=rule.id,
        file=where.file if where else "<policy>",
        line=where.line if where else 0,
        column=where.column if where else 1,
        help=help,
    )


def _covered(targets: ast.Targets, tools: dict[str, ToolSchema]) -> list[ToolSchema]:
    if targets.any:
        return list(tools.values())
    return [tool for name, tool in tools.items() if any(fnmatchcase(name, p) for p in targets.names)]


def _rule_findings(rule: ast.Rule, tools: dict[str, ToolSchema] | None) -> Iterator[Finding]:
    unconditional = not rule.subjects and not rule.clauses
    if rule.targets.any and unconditional and rule.kind in ("allow", "deny") and not rule.monitor:
        verb = {"allow": "allows", "deny": "denies"}[rule.kind]
        yield _finding(
            rule,
            "warning",
            f"{verb}-everything",
            f"this rule {verb} every call of every tool",
            "name the tools, or add a condition",
        )
    if rule.kind == "approval" and rule.approver is None:
        yield _finding(
            rule,
            "error",
            "approval-without-approver",
            "this approval rule names no approver role, so the gateway denies every call it matches",
            'say who may approve: `require approval from role "manager" for ...`',
        )
    region = rule_region(rule)
    parts = [(clause, part) for clause in rule.clauses for part in impossible_parts(clause.cond)]
    for clause, part in parts:
        whole = part is clause.cond and clause.mode == "when"
        message, help = _impossible(whole, "this rule never applies")
        yield _finding(rule, "error", "impossible-condition", message, help, part.span)
    if not parts and region is not None and is_empty(region):
        message, help = _impossible(True, "this rule never applies")
        yield _finding(rule, "error", "impossible-condition", message, help)
    if tools is None:
        return
    yield from _tool_findings(rule, tools)
    covered = _covered(rule.targets, tools)
    excluded = region is not None and len(covered) == 1 and not is_empty(region)
    if excluded and region is not None and is_empty(meet(region, _schema_region(region, covered[0]))):
        yield _finding(
            rule,
            "warning",
            "excluded-by-schema",
            f"the schema of `{covered[0].name}` already rules out every call this rule matches",
            "keep it only as defence in depth for calls that skip schema validation",
        )


def _impossible(whole: bool, consequence: str) -> tuple[str, str]:
    """Message and help for a condition that can never hold (``whole``: all of it, not one part)."""
    if whole:
        return f"the condition can never hold, so {consequence}", "check the bounds and values; it is dead as written"
    return "this part of the condition can never hold", "check the bounds and values; as written it is always false"


def _schema_region(region: Region, tool: ToolSchema) -> Region:
    bounds: Region = {}
    for dim in region:
        if dim[0] == "args":
            schema = tool.at(dim[1:])
            constraint = schema_constraint(schema) if schema else None
            if constraint is not None:
                bounds[dim] = constraint
    return bounds


def _tool_findings(rule: ast.Rule, tools: dict[str, ToolSchema]) -> Iterator[Finding]:
    names = sorted(tools)
    for pattern in rule.targets.names:
        if any(c in pattern for c in "*?["):
            if not any(fnmatchcase(name, pattern) for name in names):
                yield _finding(
                    rule,
                    "warning",
                    "unmatched-pattern",
                    f"pattern `{pattern}` matches no known tool",
                    span=rule.targets.span,
                )
        elif pattern not in tools:
            yield _finding(
                rule,
                "error",
                "unknown-tool",
                f"unknown tool `{pattern}`",
                _did_you_mean(pattern, names),
                rule.targets.span,
            )
    covered = _covered(rule.targets, tools)
    if not covered:
        return
    for clause in rule.clauses:
        for compare in _compares(clause.cond):
            yield from _compare_findings(rule, compare, covered)


def _compares(cond: ast.Cond) -> Iterator[ast.Compare]:
    if isinstance(cond, (ast.And, ast.Or)):
        for item in cond.items:
            yield from _compares(item)
    elif isinstance(cond, (ast.Not, ast.IfPresent)):
        yield from _compares(cond.item)
    elif isinstance(cond, ast.Quantified):
        yield from _compares(cond.cond)
    elif isinstance(cond, ast.Compare):
        yield cond


def _arg_paths(value: object) -> Iterator[ast.Path]:
    """Every argument path a value reads (in keys, operands, lists quantified over, nested conditions)."""
    if isinstance(value, ast.Path):
        if value.root == "args":
            yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _arg_paths(item)
    elif isinstance(value, ast.Node) and not isinstance(value, (ast.Sum, ast.Count)):
        for name, part in value.__dict__.items():
            if name != "span" and isinstance(part, (ast.Node, tuple)):
                yield from _arg_paths(part)


def _compare_findings(rule: ast.Rule, compare: ast.Compare, covered: list[ToolSchema]) -> Iterator[Finding]:
    for value in (compare.left, *compare.right):
        for path in _arg_paths(value):
            if not any(tool.at(path.parts) is not None for tool in covered):
                near = sorted({n for tool in covered for n in tool.names(path.parts)})
                tools = ", ".join(t.name for t in covered[:3]) + (" ..." if len(covered) > 3 else "")
                yield _finding(
                    rule,
                    "error",
                    "unknown-argument",
                    f"`{'.'.join(path.parts)}` is not an argument of {tools}",
                    _did_you_mean(path.parts[-1], near),
                    path.span,
                )
    left = compare.left
    if not (isinstance(left, ast.Path) and left.root == "args"):
        return
    schema = next((s for s in (tool.at(left.parts) for tool in covered) if s is not None), None)
    kind = schema.get("type") if schema else None
    if not isinstance(kind, str):
        return
    problem = ""
    if compare.op in _NUMERIC_OPS and kind not in ("number", "integer"):
        problem = f"compares `{'.'.join(left.parts)}` as a number, but the schema says it is {_a(kind)}"
    elif compare.op in _TEXT_OPS and kind != "string":
        problem = f"treats `{'.'.join(left.parts)}` as text, but the schema says it is {_a(kind)}"
    elif compare.op in _TEXT_OPS and any(
        isinstance(v, ast.Lit) and not isinstance(v.value, str) for v in compare.right
    ):
        problem = f"`{compare.op.replace('_', ' ')}` needs a text value to compare `{'.'.join(left.parts)}` with"
    elif compare.op in ("eq", "ne", "one_of", "not_one_of"):
        for literal in compare.right:
            if isinstance(literal, ast.Lit) and not _fits(literal.value, kind):
                problem = f"`{'.'.join(left.parts)}` is {_a(kind)} in the schema, so it never equals {literal.value!r}"
    if problem:
        yield _finding(
            rule, "error", "type-mismatch", problem, "compare with a value of the argument's type", compare.span
        )


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _fits(value: object, kind: str) -> bool:
    actual = _JSON_TYPES.get(type(value), "object")
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return actual == kind or (actual == "number" and kind == "integer" and integral)


def _did_you_mean(word: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else ""


def _targets_within(inner: ast.Targets, outer: ast.Targets, tools: dict[str, ToolSchema] | None) -> bool:
    if outer.any:
        return True
    if inner.any:
        return False
    if tools is not None and all(not any(c in p for c in "*?[") for p in outer.names):
        inner_tools = {t.name for t in _covered(inner, tools)} or set(inner.names)
        return inner_tools <= set(outer.names) and all(p in tools or p in outer.names for p in inner.names)
    return all(any(fnmatchcase(name, p) for p in outer.names) or name in outer.names for name in inner.names)


def _overlap(a: ast.Targets, b: ast.Targets) -> bool:
    if a.any or b.any:
        return True
    return any(fnmatchcase(x, y) or fnmatchcase(y, x) for x in a.names for y in b.names)


def _line(rule: ast.Rule) -> int:
    return rule.span.line if rule.span else 0


def _is_wide(rule: ast.Rule) -> bool:
    """Does ``rule`` target every tool or a glob (which may match any exact name)?"""
    return rule.targets.any or any(c in name for name in rule.targets.names for c in "*?[")


def _overlapping(active: list[tuple[ast.Rule, Region | None]]) -> Callable[[ast.Rule], list[int]]:
    """Indexes into ``active`` (in order) of the rules whose targets may overlap a rule's: those on every tool or
    a glob, and those naming one of its tools. Two sets of exact names overlap only where they share one, so a
    bundle of many tools is checked pair by pair within each tool, not across all pairs of rules."""
    wide: list[int] = []
    by_name: dict[str, list[int]] = {}
    for index, (rule, _) in enumerate(active):
        if _is_wide(rule):
            wide.append(index)
        else:
            for name in rule.targets.names:
                by_name.setdefault(name, []).append(index)
    every = list(range(len(active)))

    def candidates(rule: ast.Rule) -> list[int]:
        if _is_wide(rule):
            return every
        return sorted({*wide, *(i for name in rule.targets.names for i in by_name.get(name, ()))})

    return candidates


def _pair_findings(rules: list[ast.Rule], tools: dict[str, ToolSchema] | None) -> Iterator[Finding]:
    active = [(r, rule_region(r)) for r in rules if not r.monitor and r.kind in ("allow", "deny", "approval")]
    strength = {"deny": 2, "approval": 1, "allow": 0}
    overlapping = _overlapping(active)
    for rule, region in active:
        if region is not None and is_empty(region):
            continue
        near = [active[i] for i in overlapping(rule)]
        for other, other_region in near:
            if other is rule or other_region is None or (region is None and other_region):
                continue
            stronger = strength[other.kind] > strength[rule.kind]
            inside = region is None or contains(other_region, region)  # None: only an unconditional rule covers it
            if not (inside and (stronger or other.kind == rule.kind)):
                continue
            mutual = region is not None and contains(region, other_region)
            if (
                not stronger
                and mutual
                and _line(other) > _line(rule)
                and _targets_within(other.targets, rule.targets, tools)
            ):
                continue  # two equivalent rules: report only the later one
            if _targets_within(rule.targets, other.targets, tools):
                verb = "already decides" if stronger else "already matches"
                yield _finding(
                    rule,
                    "warning",
                    "shadowed",
                    f"this rule can never change a decision: rule `{other.id}` (line "
                    f"{other.span.line if other.span else 0}) {verb} every call it matches",
                    "remove it or narrow the other rule",
                )
                break
        if rule.kind != "allow" or region is None:
            continue
        for other, other_region in near:
            if other.kind != "deny" or other_region is None or not _overlap(rule.targets, other.targets):
                continue
            both = meet(region, other_region)
            if not is_empty(both) and not contains(other_region, region) and rule.clauses and other.clauses:
                yield _finding(
                    rule,
                    "warning",
                    "conflict",
                    f"this rule and deny rule `{other.id}` (line {other.span.line if other.span else 0}) "
                    "both match some calls; deny wins there",
                    "make the conditions disjoint if unintended",
                )
