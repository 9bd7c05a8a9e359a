"""The policy engine: load a bundle once, then decide requests fast, deterministically and thread-safely.

Combining: any matching deny (or exceeded limit) -> DENY; else any matching approval -> NEEDS_APPROVAL; else any
matching allow -> ALLOW; else the bundle default (deny unless a file says ``default allow.``). A denial lists
every matching deny rule, an approval every matching approval rule, an allow the first matching allow rule;
:meth:`PolicyEngine.explain` returns the same decision as :meth:`PolicyEngine.decide`. Monitor rules are
evaluated on the side and reported in ``Decision.monitored`` / ``would_effect``. Any exception escaping evaluation
yields DENY with the reason, so a bug or hostile input never grants access.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from agentcore.policies import ast
from agentcore.policies.compiler import (
    FAILS_CLOSED_TO_MATCH,
    Bundle,
    CompiledRule,
    Plan,
    collector_paused,
    compile_bundle,
)
from agentcore.policies.context import DecisionContext, Scope, scope_key
from agentcore.policies.errors import PolicyError, PolicySyntaxError, Problem
from agentcore.policies.model import (
    NO_OBLIGATIONS,
    AgentInfo,
    Decision,
    Effect,
    Obligations,
    Principal,
    RateLimit,
    Reason,
    RedactPattern,
    Request,
)
from agentcore.policies.parser import SCHEMA_SUFFIX, parse
from agentcore.policies.values import Env, Unevaluable
from agentcore.text import canonical_text

logger = logging.getLogger(__name__)
POLICY_SUFFIX = ".policy"
_CACHE_LIMIT = 65_536


class NoContext:
    """The context used when the caller gives none: every stateful fact is unavailable (rules fail closed)."""

    def _missing(self) -> Any:
        raise LookupError("no DecisionContext was given to decide(); stateful rules need one")

    def resolve(self, entity: str, key: Any) -> Any:
        return self._missing()

    def count(self, *args: Any, **kwargs: Any) -> int:
        return self._missing()

    def total(self, *args: Any, **kwargs: Any) -> float:
        return self._missing()

    def last_call(self, *args: Any, **kwargs: Any) -> datetime | None:
        return self._missing()

    def spend(self, *args: Any, **kwargs: Any) -> float:
        return self._missing()

    def detect(self, detector: str, text: str) -> float:
        return self._missing()


NO_CONTEXT = NoContext()


MISSING = "pass a .policy file or a folder of them, or run `agentcore init` to write a starter bundle"


def policy_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand directories to their ``*.policy`` and ``*.schema`` files (sorted); keep files as given."""
    found: list[Path] = []
    entries = [Path(entry) for entry in paths]
    for entry in entries:
        if entry.is_dir():
            found.extend(sorted([*entry.rglob(f"*{POLICY_SUFFIX}"), *entry.rglob(f"*{SCHEMA_SUFFIX}")]))
        elif entry.exists():
            found.append(entry)
        else:
            raise PolicySyntaxError([Problem(f"policy path {str(entry)!r} does not exist", str(entry), help=MISSING)])
    if not any(path.suffix != SCHEMA_SUFFIX for path in found):
        shown = ", ".join(map(str, entries)) or "<no paths>"
        raise PolicySyntaxError([Problem(f"no *{POLICY_SUFFIX} files found", shown, help=MISSING)])
    return found


def parse_sources(sources: dict[str, str]) -> list[ast.PolicyFile]:
    """Parse every file, raising one :class:`PolicySyntaxError` with the problems of all files."""
    files: list[ast.PolicyFile] = []
    problems: list[Problem] = []
    for path, text in sources.items():
        try:
            files.append(parse(text, path))
        except PolicySyntaxError as error:
            problems.extend(error.problems)
    if problems:
        raise PolicySyntaxError(problems)
    return files


def read_sources(paths: Iterable[str | Path]) -> dict[str, str]:
    """``{path: text}`` of every ``*.policy`` and ``*.schema`` file in ``paths``; bytes that are not UTF-8 become
    parse errors at their line and column (``surrogateescape``), not decoding tracebacks."""
    sources = {}
    for path in policy_files(paths):
        try:
            sources[str(path)] = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as error:
            raise PolicySyntaxError([Problem(f"cannot read policy file: {error}", str(path))]) from None
    return sources


class PolicyEngine:
    """A compiled policy bundle. Build with :meth:`from_paths` or :meth:`from_text`; then :meth:`decide`."""

    def __init__(self, bundle: Bundle, traced: Bundle | None = None) -> None:
        self._bundle = bundle
        self._traced = traced
        self._plans: dict[str, Plan] = {}
        self._decisions: dict[tuple[Any, ...], Decision] = {}
        self._alone_decisions: dict[int, Decision] = {}
        self._denials: dict[tuple[int, ...], Decision] = {}

    @classmethod
    def from_sources(cls, sources: dict[str, str], default: Effect | None = None) -> PolicyEngine:
        """Compile a bundle from ``{path: text}``."""
        with collector_paused():
            files = parse_sources(sources)
            return cls(compile_bundle(files, sources, default))

    @classmethod
    def from_paths(cls, paths: Iterable[str | Path], default: Effect | None = None) -> PolicyEngine:
        """Compile every ``*.policy`` file in ``paths`` (files or directories) into one bundle."""
        return cls.from_sources(read_sources(paths), default)

    @classmethod
    def from_text(cls, text: str, path: str = "<policy>", default: Effect | None = None) -> PolicyEngine:
        """Compile a single policy text."""
        return cls.from_sources({path: text}, default)

    @property
    def bundle(self) -> Bundle:
        return self._bundle

    @property
    def bundle_hash(self) -> str:
        return self._bundle.bundle_hash

    @property
    def files(self) -> tuple[ast.PolicyFile, ...]:
        return self._bundle.files

    def decide(self, request: Request, context: DecisionContext | None = None) -> Decision:
        """Decide one request. Never raises for a bad request: it is denied with the reason."""
        try:
            return self._decide(self._bundle, self._plans, Env(request, context or NO_CONTEXT))
        except Exception as error:
            return _failure(self._bundle, error)

    def decide_many(self, requests: Iterable[Request], context: DecisionContext | None = None) -> list[Decision]:
        """Decide a batch in order: the same decisions as :meth:`decide` on each, with less overhead per call."""
        decide, bundle, plans, facts = self._decide, self._bundle, self._plans, context or NO_CONTEXT
        decisions: list[Decision] = []
        append = decisions.append
        for request in requests:
            try:
                append(decide(bundle, plans, Env(request, facts)))
            except Exception as error:
                append(_failure(bundle, error))
        return decisions

    def could_allow(self, principal: Principal, agent: AgentInfo, action: str) -> bool:
        """Could some request by ``principal`` (through ``agent``) for ``action`` be allowed, perhaps after approval?

        A permissive partial evaluation for per-caller tool lists: conditions on arguments, state and time are
        assumed satisfiable, and the tenant (unknown until a call) may match; an unconditional deny whose subjects
        surely hold rules the action out. Listing is advisory: every call is still decided in full.
        """
        plan = self._plans.get(action) or self._bundle.plan(action)
        for rule in plan.denies:
            if rule.kind == "deny" and not rule.rule.clauses and _subjects_hold(rule, principal, agent, surely=True):
                return False
        if any(_subjects_hold(rule, principal, agent, surely=False) for rule in (*plan.allows, *plan.approvals)):
            return True
        return self._bundle.default is Effect.ALLOW

    def explain(
        self, request: Request, context: DecisionContext | None = None
    ) -> tuple[Decision, list[tuple[str, Any]]]:
        """Decide with tracing: exactly :meth:`decide`'s decision, plus every evaluated condition's text and value."""
        if self._traced is None:
            bundle = self._bundle
            self._traced = compile_bundle(bundle.files, bundle.sources, bundle.default, traced=True)
        trace: list[tuple[str, Any]] = []
        env = Env(request, context or NO_CONTEXT, trace)
        try:
            return self._decide(self._traced, {}, env), trace
        except Exception as error:
            return _failure(self._bundle, error), trace

    def _decide(self, bundle: Bundle, plans: dict[str, Plan], env: Env) -> Decision:
        # The hot path: loops are written out (not a shared helper) because calls dominate its cost, and the
        # commonest outcomes (one clean deny or allow rule, or none, nothing else to report) return a cached
        # Decision.
        # Every deny rule is evaluated so a denial names all the rules that deny; the first allow suffices.
        action = env.request.action
        plan = plans.get(action)
        if plan is None:
            plan = bundle.plan(action)
            if len(plans) < _CACHE_LIMIT:
                plans[action] = plan
        run: _Run | None = None  # allocated only when something besides clean deny rules must be reported
        simple = not plan.monitors
        clean: list[CompiledRule] = []  # the clean deny rules matched so far while ``run`` is None
        for rule in plan.denies:
            try:
                if not rule.check(env):
                    continue
            except Exception as caught:
                run = run or _Run(clean)
                run.fail(rule, caught, "could not evaluate")
            if run is None and rule.kind == "deny":
                clean.append(rule)
                continue
            run = run or _Run(clean)
            if rule.kind == "limit" and id(rule) not in run.failures:
                note, reservation = _check_limit(rule, env)
                if reservation is not None:
                    run.limits.append(reservation)
                    continue
                run.dynamic = True
                run.reasons.append(_noted(rule.reason, note))
            else:
                run.reasons.append(run.closed_reason(rule))
        if clean and run is None:
            if simple:
                if len(clean) == 1:
                    return self._alone(bundle, clean[0].reason, Effect.DENY)
                return self._denial(bundle, clean)
            run = _Run(clean)
        if run is not None and run.reasons:
            return self._finish(bundle, plan, env, Effect.DENY, run, True)
        for rule in plan.approvals:
            try:
                if not rule.check(env):
                    continue
            except Exception as caught:
                run = run or _Run()
                run.fail(rule, caught, "could not evaluate")
            run = run or _Run()
            run.reasons.append(run.closed_reason(rule))
            if rule.approver:
                run.approvers.append(rule.approver)
        if run is not None and run.reasons:
            effect = Effect.NEEDS_APPROVAL
        else:
            for rule in plan.allows:
                try:
                    if not rule.check(env):
                        continue
                except Exception as caught:
                    run = run or _Run()
                    run.fail(rule, caught, "could not evaluate, so it does not allow")
                    continue
                if simple and run is None and not plan.obligations:
                    return self._alone(bundle, rule.reason, Effect.ALLOW)
                run = run or _Run()
                run.reasons.append(rule.reason)
                break
            if simple and run is None and not plan.obligations:  # no rule matched, nothing else to report
                return self._alone(bundle, bundle.default_reason, bundle.default)
            run = run or _Run()
            effect = Effect.ALLOW if run.reasons else bundle.default
        by_rule = bool(run.reasons)
        if not by_rule:
            run.reasons.append(bundle.default_reason)
            run.reasons.extend(run.errors)
        if effect is not Effect.DENY:
            for rule in plan.obligations:
                try:
                    if not rule.check(env):
                        continue
                except Exception as caught:
                    run.fail(rule, caught, "could not evaluate, applied anyway")
                run.obligation_rules.append(rule)
        return self._finish(bundle, plan, env, effect, run, by_rule)

    def _alone(self, bundle: Bundle, reason: Reason, effect: Effect) -> Decision:
        """The decision made by one rule (or the default) alone, built once per rule: its reason is the key, as a
        rule (and the default) always has the same effect."""
        decision = self._alone_decisions.get(id(reason))
        if decision is None:
            decision = Decision(effect=effect, reasons=(reason,), bundle_hash=bundle.bundle_hash)
            self._alone_decisions[id(reason)] = decision
        return decision

    def _denial(self, bundle: Bundle, rules: list[CompiledRule]) -> Decision:
        """The denial by several clean deny rules alone (no monitors, failures or limits): what :meth:`_finish`
        builds for them, cached by the rules without the rest of its key."""
        key = tuple(map(id, rules))
        decision = self._denials.get(key)
        if decision is None:
            decision = Decision(
                effect=Effect.DENY, reasons=tuple(r.reason for r in rules), bundle_hash=bundle.bundle_hash
            )
            if len(self._denials) < _CACHE_LIMIT:
                self._denials[key] = decision
        return decision

    def _finish(self, bundle: Bundle, plan: Plan, env: Env, effect: Effect, run: _Run, by_rule: bool) -> Decision:
        would: Effect | None = None
        if plan.monitors:
            kinds = set()
            for rule in plan.monitors:
                try:
                    if not rule.check(env):
                        continue
                except Exception as caught:
                    run.fail(rule, caught, None)
                    if not FAILS_CLOSED_TO_MATCH[rule.kind]:
                        continue
                run.monitored.append(run.closed_reason(rule))
                kinds.add(rule.kind)
            would = _would(effect, by_rule, kinds, bundle.default)
        key = None
        if not run.dynamic and not run.limits:
            key = (
                effect,
                would,
                tuple(map(id, run.reasons)),
                tuple(map(id, run.monitored)),
                tuple(map(id, run.obligation_rules)),
                tuple(run.approvers),
            )
            cached = self._decisions.get(key)
            if cached is not None:
                return cached
        decision = Decision(
            effect=effect,
            reasons=tuple(run.reasons),
            obligations=NO_OBLIGATIONS if effect is Effect.DENY else run.obligations(),
            bundle_hash=bundle.bundle_hash,
            errors=tuple(run.errors),
            monitored=tuple(run.monitored),
            would_effect=would,
        )
        if key is not None and len(self._decisions) < _CACHE_LIMIT:
            self._decisions[key] = decision
        return decision


class _Run:
    """What one decision collects. ``dynamic`` marks a decision that carries request-specific notes (not cached)."""

    __slots__ = ("approvers", "dynamic", "errors", "failures", "limits", "monitored", "obligation_rules", "reasons")

    def __init__(self, matched: Sequence[CompiledRule] = ()) -> None:
        self.reasons: list[Reason] = [rule.reason for rule in matched] if matched else []  # clean denies so far
        self.errors: list[Reason] = []
        self.monitored: list[Reason] = []
        self.limits: list[RateLimit] = []
        self.approvers: list[str] = []
        self.obligation_rules: list[CompiledRule] = []
        self.failures: dict[int, str] = {}
        self.dynamic = False

    def fail(self, rule: CompiledRule, caught: Exception, label: str | None) -> None:
        """Record a rule whose condition could not be evaluated (the caller applies the fail-closed outcome)."""
        error = str(caught) if isinstance(caught, Unevaluable) else f"{type(caught).__name__}: {caught}"
        self.dynamic = True
        self.failures[id(rule)] = error
        if label is not None:
            self.errors.append(_noted(rule.reason, f"{label}: {error}"))

    def closed_reason(self, rule: CompiledRule) -> Reason:
        """The rule's reason, noting when it matched only because it failed closed."""
        error = self.failures.get(id(rule))
        return rule.reason if error is None else _noted(rule.reason, f"failed closed: {error}")

    def obligations(self) -> Obligations:
        if not (self.obligation_rules or self.approvers or self.limits):
            return NO_OBLIGATIONS
        patterns: list[RedactPattern] = []
        fields: list[str] = []
        for rule in self.obligation_rules:
            patterns.extend(p for p in rule.redactions if p not in patterns)
            fields.extend(f for f in rule.redact_fields if f not in fields)
        return Obligations(
            redact_patterns=tuple(patterns),
            redact_fields=tuple(fields),
            suppress_output=any(rule.kind == "suppress" for rule in self.obligation_rules),
            approver_roles=tuple(dict.fromkeys(self.approvers)),
            rate_limits=tuple(self.limits),
        )


def _would(effect: Effect, by_rule: bool, monitored: set[str], default: Effect) -> Effect:
    """The effect had the matched monitor rules been enforced."""
    if (effect is Effect.DENY and by_rule) or monitored & {"deny", "limit"}:
        return Effect.DENY
    if effect is Effect.NEEDS_APPROVAL or "approval" in monitored:
        return Effect.NEEDS_APPROVAL
    if by_rule or "allow" in monitored:
        return Effect.ALLOW
    return default


def _check_limit(rule: CompiledRule, env: Env) -> tuple[str, RateLimit | None]:
    spec = rule.rule.limit
    assert spec is not None
    scope = Scope(spec.scope)
    key = scope_key(env.request, scope)
    if key is None:
        return f"failed closed: the request has no {scope.value} id to count calls against", None
    try:
        used = env.context.count(
            rule.patterns, scope, key, spec.window.seconds, env.request.context.time, tenant=env.request.context.tenant
        )
    except Exception as error:
        return f"failed closed: call history is unavailable: {error}", None
    if used >= spec.count:
        return f"limit reached: {used} calls in the window, the limit is {spec.count}", None
    return "", RateLimit(
        rule_id=rule.reason.rule_id,
        actions=rule.patterns,
        scope=scope.value,
        key=key,
        tenant=env.request.context.tenant,
        window_seconds=spec.window.seconds,
        limit=spec.count,
    )


def _subjects_hold(rule: CompiledRule, principal: Principal, agent: AgentInfo, *, surely: bool) -> bool:
    """Do the rule's ``for`` subjects hold for this caller? A tenant subject may hold, but never surely."""
    for subject in rule.rule.subjects:
        value = canonical_text(subject.value)  # as the compiled rule compares it
        if subject.kind == "role" and value not in principal.roles:
            return False
        if subject.kind == "user" and value != principal.id:
            return False
        if subject.kind == "agent" and value != agent.id:
            return False
        if subject.kind == "tenant" and surely:
            return False
    return True


def _noted(reason: Reason, note: str) -> Reason:
    return reason.model_copy(update={"note": note})


def _failure(bundle: Bundle, error: Exception) -> Decision:
    """DENY for a request whose evaluation raised (a bug or a malformed request never grants access)."""
    logger.warning("policy evaluation failed, denying: %s", error, exc_info=True)
    reason = Reason(
        rule_id="engine",
        file="<engine>",
        line=0,
        text="evaluation failed",
        effect="deny",
        note=f"denied because evaluation failed: {type(error).__name__}: {error}",
    )
    return Decision(effect=Effect.DENY, reasons=(reason,), bundle_hash=bundle.bundle_hash, errors=(reason,))


__all__ = ["NoContext", "PolicyEngine", "PolicyError", "parse_sources", "policy_files"]
