"""Step three: parsed files -> :class:`Bundle` of compiled rules, indexed by action.

Every rule becomes a :class:`CompiledRule` holding one closure for its conditions (subjects, ``when``,
``unless`` and temporal clauses conjoined) plus precomputed reasons and obligations, so a decision only looks
up its action's plan and calls closures.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agentcore.policies import ast
from agentcore.policies.conditions import CompileError, Compiler, Test, _all
from agentcore.policies.context import action_matches
from agentcore.policies.errors import PolicyCheckError, Problem
from agentcore.policies.model import Effect, Reason, RedactPattern
from agentcore.policies.named import definitions_of, named_problems
from agentcore.policies.regex import compile_regex
from agentcore.policies.values import Env
from agentcore.text import canonical_text

REDACTION_PATTERNS = {
    "email": RedactPattern(name="email", regex=r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"),
    "card": RedactPattern(name="card", regex=r"\b(?:\d[ -]?){12,18}\d\b"),
    "phone": RedactPattern(name="phone", regex=r"\+?\d[\d ()-]{7,}\d"),
    "ip": RedactPattern(name="ip", regex=r"\b(?:\d{1,3}\.){3}\d{1,3}\b"),
    # the gateway's validating detectors (mod-97, token formats) replace these two by name
    "iban": RedactPattern(name="iban", regex=r"\b[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){11,30}\b"),
    "secret": RedactPattern(name="secret", regex=r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|-----BEGIN [A-Z ]*PRIVATE KEY-----"),
}
# A rule whose condition cannot be evaluated matches when matching is the safer outcome (fail closed).
FAILS_CLOSED_TO_MATCH = {
    "allow": False,
    "deny": True,
    "approval": True,
    "limit": True,
    "redact": True,
    "suppress": True,
}


@dataclass(frozen=True)
class CompiledRule:
    """A rule ready to evaluate.

    ``check`` tests the ``for`` subjects (which never raise) and then the clauses, which may raise
    :class:`~agentcore.policies.values.Unevaluable`; the engine resolves that to the fail-closed outcome.
    """

    rule: ast.Rule
    reason: Reason
    check: Test
    patterns: tuple[str, ...]
    redactions: tuple[RedactPattern, ...] = ()
    redact_fields: tuple[str, ...] = ()
    kind: str = field(init=False)  # the rule's, read by every matching deny: a field, not a property call
    approver: str | None = field(init=False)  # canonical, as the approvers' roles are compared

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", self.rule.kind)
        object.__setattr__(self, "approver", self.rule.approver and canonical_text(self.rule.approver))

    def covers(self, action: str) -> bool:
        return action_matches(action, self.patterns)


@dataclass(frozen=True)
class Plan:
    """The rules that apply to one action, split by how they combine."""

    denies: tuple[CompiledRule, ...]
    approvals: tuple[CompiledRule, ...]
    allows: tuple[CompiledRule, ...]
    obligations: tuple[CompiledRule, ...]
    monitors: tuple[CompiledRule, ...]


@dataclass(frozen=True)
class Bundle:
    """All compiled rules of a set of files, the default effect and the bundle hash."""

    files: tuple[ast.PolicyFile, ...]
    rules: tuple[CompiledRule, ...]
    default: Effect
    bundle_hash: str
    exact: dict[str, tuple[CompiledRule, ...]]
    globs: tuple[CompiledRule, ...]
    sources: dict[str, str]
    default_reason: Reason

    def plan(self, action: str) -> Plan:
        chosen = set(map(id, self.exact.get(action, ())))
        chosen.update(id(r) for r in self.globs if r.covers(action))
        rules = [r for r in self.rules if id(r) in chosen]
        active = [r for r in rules if not r.rule.monitor]
        return Plan(
            denies=tuple(r for r in active if r.kind in ("deny", "limit")),
            approvals=tuple(r for r in active if r.kind == "approval"),
            allows=tuple(r for r in active if r.kind == "allow"),
            obligations=tuple(r for r in active if r.kind in ("redact", "suppress")),
            monitors=tuple(r for r in rules if r.rule.monitor),
        )


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a bundle loads.

    Parsing and compiling build millions of small objects and no garbage cycles; the collector would scan them
    over and over (more than half of the load time of 10,000 rules). It is resumed afterwards unless the
    caller had paused it already.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def compile_bundle(
    files: Sequence[ast.PolicyFile], sources: dict[str, str], default: Effect | None = None, traced: bool = False
) -> Bundle:
    """Compile parsed files; raise :class:`PolicyCheckError` listing every rule that cannot be compiled."""
    named = named_problems(files)
    if named:
        raise PolicyCheckError([_problem(p.message, p.span, sources, p.help) for p in named])
    compiler = Compiler(sources, traced=traced, definitions=definitions_of(files))
    problems: list[Problem] = []
    rules: list[CompiledRule] = []
    for file in files:
        for rule in file.rules:
            try:
                rules.append(_compile_rule(rule, compiler))
            except CompileError as error:
                problems.append(_problem(str(error), error.span or rule.span, sources, error.help))
    for file in files:
        for definition in file.definitions:  # an unused definition must compile too (a bad regex, time zone)
            try:
                compiler.cond(ast.Named(name=definition.name, span=definition.span))
            except CompileError as error:
                problems.append(_problem(str(error), error.span or definition.span, sources, error.help))
    defaults = {f.default for f in files if f.default is not None}
    if len(defaults) > 1 and default is None:
        first = next(f for f in files if f.default is not None)
        problems.append(
            Problem(
                "the files of this bundle set different defaults (allow and deny)",
                first.path,
                help="set `default ...` in one file only, or pass default= to the engine",
            )
        )
    if problems:
        raise PolicyCheckError(problems)
    chosen = default or (Effect(defaults.pop()) if defaults else Effect.DENY)
    exact: dict[str, list[CompiledRule]] = {}
    globs: list[CompiledRule] = []
    for compiled in rules:
        if all(not any(c in p for c in "*?[") for p in compiled.patterns):
            for name in compiled.patterns:
                exact.setdefault(name, []).append(compiled)
        else:
            globs.append(compiled)
    digest = hashlib.sha256()
    for path in sorted(sources):
        digest.update(path.encode() + b"\0" + sources[path].encode() + b"\0")
    digest.update(chosen.value.encode())
    return Bundle(
        files=tuple(files),
        rules=tuple(rules),
        default=chosen,
        bundle_hash=digest.hexdigest(),
        exact={k: tuple(v) for k, v in exact.items()},
        globs=tuple(globs),
        sources=dict(sources),
        default_reason=_default_reason(chosen),
    )


def _default_reason(default: Effect) -> Reason:
    note = "no rule allowed this call" if default is Effect.DENY else "no rule matched; the bundle allows by default"
    return Reason(
        rule_id="default", file="<bundle>", line=0, text=f"default {default.value}.", effect="default", note=note
    )


def _problem(message: str, span: ast.Span | None, sources: dict[str, str], help: str = "") -> Problem:
    if span is None:
        return Problem(message, help=help)
    lines = sources.get(span.file, "").splitlines()
    source_line = lines[span.line - 1] if 0 < span.line <= len(lines) else ""
    return Problem(message, span.file, span.line, span.column, source_line, help)


def _compile_rule(rule: ast.Rule, compiler: Compiler) -> CompiledRule:
    guards = [_subject(s) for s in rule.subjects]
    lone = rule.subjects[0] if len(rule.subjects) == 1 else None
    tests: list[Test] = []
    for clause in rule.clauses:
        test = compiler.cond(clause.cond)
        tests.append((lambda t: lambda env: not t(env))(test) if clause.mode == "unless" else test)
    span = rule.span
    reason = Reason(
        rule_id=rule.id,
        file=span.file if span else "<policy>",
        line=span.line if span else 0,
        text=rule.text,
        effect=rule.kind,
    )
    redactions: list[RedactPattern] = []
    fields: list[str] = []
    for redaction in rule.redactions:
        if redaction.kind == "fields":
            fields.extend(redaction.fields)
        elif redaction.kind == "pattern":
            pattern = redaction.pattern or ""
            try:
                compile_regex(pattern)
            except ValueError as error:
                raise CompileError(f"invalid redaction pattern {pattern!r}: {error}", redaction.span) from None
            redactions.append(RedactPattern(name=redaction.name or "pattern", regex=pattern))
        else:
            redactions.append(REDACTION_PATTERNS[redaction.kind])
    return CompiledRule(
        rule=rule,
        reason=reason,
        check=_check(_conjoin(guards), _conjoin(tests), lone),
        patterns=rule.targets.names or ("*",),
        redactions=tuple(redactions),
        redact_fields=tuple(fields),
    )


def _always(env: object) -> bool:
    return True


def _check(guard: Test | None, test: Test | None, lone: ast.Subject | None) -> Test:
    """One closure per rule: subjects first (they never raise), then the clauses; a lone subject is inlined (one
    call fewer: most rules name one role or one agent)."""
    if guard is None:
        return test or _always
    if test is None:
        return guard
    if lone is None:
        return lambda env: guard(env) and test(env)
    return _subject(lone, test)


def _conjoin(tests: list[Test]) -> Test | None:
    return None if not tests else tests[0] if len(tests) == 1 else _all(tests)


_SUBJECT_OF: dict[str, Callable[[Env], Any]] = {
    "user": lambda env: env.request.principal.id,
    "agent": lambda env: env.request.agent.id,
    "tenant": lambda env: env.request.context.tenant,
}


def _subject(subject: ast.Subject, then: Test | None = None) -> Test:
    """A ``for`` subject's test, comparing the canonical spelling (requests arrive canonical), with the rule's
    clauses ``then`` inlined after it when given: the one place a subject is compared, however it is compiled."""
    value = canonical_text(subject.value)
    if subject.kind == "role":
        return (lambda env: value in env.roles) if then is None else (lambda env: value in env.roles and then(env))
    of = _SUBJECT_OF[subject.kind]
    return (lambda env: of(env) == value) if then is None else (lambda env: of(env) == value and then(env))
