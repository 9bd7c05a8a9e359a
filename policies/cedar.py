"""Cedar export of the stateless subset (``agentcore policy export --cedar``).

Request mapping: principal ``User::"<id>"`` with attributes ``roles`` (set) and ``claims`` (record); action
``Action::"<tool>"``; resource ``Gateway::"<resource or default>"``; context ``{args, agent: {id, attributes},
tenant?, session?}``. Allow rules become ``permit``; deny rules ``forbid``; approval rules ``forbid`` annotated
``@effect("needs_approval")`` (Cedar has no approval, so "not allowed" is what agrees).

Fail-closed semantics survive the export: each condition is translated into "definitely true" and "definitely
false" expressions guarded by ``has``, so a permit needs its condition definitely true and a forbid applies
unless its condition is definitely false. The export is exact for requests whose arguments have the types of
the tool schemas (which the gateway validates first). Rules with state, regexes, resolvers, guardrails, time
windows, non-integer numbers, obligations or monitor mode are reported as not translatable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict

from agentcore.policies import ast
from agentcore.policies.model import Request


class NotTranslatable(Exception):
    """A rule uses something Cedar cannot express."""


class CedarPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)
    rule_id: str
    tools: tuple[str, ...] | None  # None: every tool
    text: str


class Skipped(BaseModel):
    model_config = ConfigDict(frozen=True)
    rule_id: str
    file: str
    line: int
    why: str


class CedarExport(BaseModel):
    model_config = ConfigDict(frozen=True)
    policies: tuple[CedarPolicy, ...]
    skipped: tuple[Skipped, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.policies) + "\n"


def export(files: Sequence[ast.PolicyFile], tools: Sequence[str] | None = None) -> CedarExport:
    """Translate a parsed bundle; ``tools`` (all tool names) is needed to expand glob patterns."""
    policies, skipped = [], []
    defaults = {f.default for f in files if f.default}
    if defaults == {"allow"}:
        policies.append(
            CedarPolicy(rule_id="default", tools=None, text='@id("default")\npermit(principal, action, resource);')
        )
    for rule in (r for f in files for r in f.rules):
        try:
            policies.append(_rule(rule, tools))
        except NotTranslatable as why:
            span = rule.span
            skipped.append(
                Skipped(rule_id=rule.id, file=span.file if span else "", line=span.line if span else 0, why=str(why))
            )
    return CedarExport(policies=tuple(policies), skipped=tuple(skipped))


def entity_uid(kind: str, name: str) -> dict[str, str]:
    return {"type": kind, "id": name}


def _rule(rule: ast.Rule, tools: Sequence[str] | None) -> CedarPolicy:
    if rule.monitor:
        raise NotTranslatable("monitor rules are log-only; Cedar has no log-only policies")
    if rule.kind not in ("allow", "deny", "approval"):
        raise NotTranslatable(f"{rule.kind} rules are obligations or state, which Cedar cannot express")
    names = _action_names(rule.targets, tools)
    scope = "action" if names is None else (
        f"action == Action::{_q(names[0])}" if len(names) == 1 else
        "action in [" + ", ".join(f"Action::{_q(n)}" for n in names) + "]"
    )  # fmt: skip
    parts = [_subject(s) for s in rule.subjects]
    for clause in rule.clauses:
        sure_true, sure_false = _cond(clause.cond)
        parts.append(sure_false if clause.mode == "unless" else sure_true)
    true_expr = " && ".join(f"({p})" for p in parts) if parts else "true"
    annotations = [f"@id({_q(rule.id)})"]
    if rule.kind == "allow":
        body = f"permit(principal, {scope}, resource)" + (f"\nwhen {{ {true_expr} }}" if parts else "")
    else:
        if rule.kind == "approval":
            annotations.append('@effect("needs_approval")')
            if rule.approver:
                annotations.append(f"@approver({_q(rule.approver)})")
        false_parts = _negations(rule)
        body = f"forbid(principal, {scope}, resource)" + (f"\nunless {{ {false_parts} }}" if parts else "")
    return CedarPolicy(
        rule_id=rule.id, tools=None if names is None else tuple(names), text="\n".join([*annotations, body]) + ";"
    )


def _negations(rule: ast.Rule) -> str:
    """The rule's condition definitely false: any subject fails, or any clause is definitely not satisfied."""
    parts = [f"!({_subject(s)})" for s in rule.subjects]
    for clause in rule.clauses:
        sure_true, sure_false = _cond(clause.cond)
        parts.append(sure_true if clause.mode == "unless" else sure_false)
    return " || ".join(f"({p})" for p in parts)


def _action_names(targets: ast.Targets, tools: Sequence[str] | None) -> list[str] | None:
    if targets.any:
        return None
    names: list[str] = []
    for pattern in targets.names:
        if any(c in pattern for c in "*?["):
            if tools is None:
                raise NotTranslatable(f"pattern `{pattern}` needs the tool list (--tools) to expand")
            names.extend(t for t in tools if fnmatchcase(t, pattern) and t not in names)
        elif pattern not in names:
            names.append(pattern)
    if not names:
        raise NotTranslatable("its tool patterns match no known tool")
    return names


def _subject(subject: ast.Subject) -> str:
    if subject.kind == "role":
        return f"principal.roles.contains({_q(subject.value)})"
    if subject.kind == "user":
        return f"principal == User::{_q(subject.value)}"
    if subject.kind == "agent":
        return f"context.agent.id == {_q(subject.value)}"
    return f"context has tenant && context.tenant == {_q(subject.value)}"


def _cond(cond: ast.Cond) -> tuple[str, str]:
    """(definitely true, definitely false) Cedar expressions for a condition, Kleene logic preserved."""
    if isinstance(cond, ast.Not):
        sure_true, sure_false = _cond(cond.item)
        return sure_false, sure_true
    if isinstance(cond, (ast.And, ast.Or)):
        pairs = [_cond(item) for item in cond.items]
        trues = [f"({t})" for t, _ in pairs]
        falses = [f"({f})" for _, f in pairs]
        if isinstance(cond, ast.And):
            return " && ".join(trues), " || ".join(falses)
        return " || ".join(trues), " && ".join(falses)
    if not isinstance(cond, ast.Compare):
        raise NotTranslatable("time windows and sequence rules depend on state Cedar does not have")
    defined, test = _compare(cond)
    if defined == "true":
        return test, f"!({test})"
    return f"{defined} && ({test})", f"{defined} && !({test})"


def _compare(cond: ast.Compare) -> tuple[str, str]:
    left, left_defined = _value(cond.left)
    if cond.op in ("missing", "present"):
        return "true", (f"!({left_defined})" if cond.op == "missing" else left_defined)
    if cond.op in ("has_role", "not_has_role"):
        test = f"principal.roles.contains({_literal(cond.right[0])})"
        return "true", test if cond.op == "has_role" else f"!({test})"
    if cond.op in ("matches", "not_matches"):
        raise NotTranslatable("Cedar has no regular expressions")
    rights = [_value(v) for v in cond.right]
    defined = " && ".join(d for d in [left_defined, *(d for _, d in rights)] if d != "true") or "true"
    values = [v for v, _ in rights]
    positive = {"ne": "eq"}.get(cond.op, cond.op.removeprefix("not_"))
    negate = positive != cond.op
    if positive == "eq":
        test = f"{left} == {values[0]}"
    elif positive in ("gt", "ge", "lt", "le"):
        test = f"{left} {dict(gt='>', ge='>=', lt='<', le='<=')[positive]} {values[0]}"
    elif positive == "between":
        test = f"{values[0]} <= {left} && {left} <= {values[1]}"
    elif positive == "one_of":
        test = f"[{', '.join(values)}].contains({left})"
    elif positive in ("contains", "starts_with", "ends_with"):
        literal = cond.right[0]
        if not isinstance(literal, ast.Lit) or not isinstance(literal.value, str):
            raise NotTranslatable("text tests against a non-literal cannot be written with Cedar's `like`")
        escaped = json.dumps(literal.value)[1:-1].replace("*", "\\*")
        pattern = {"contains": f"*{escaped}*", "starts_with": f"{escaped}*", "ends_with": f"*{escaped}"}[positive]
        test = f'{left} like "{pattern}"'
    else:
        raise NotTranslatable(f"`{cond.op}` has no Cedar equivalent")
    return defined, f"!({test})" if negate else test


def _value(value: ast.Value) -> tuple[str, str]:
    """(Cedar expression, its definedness guard) for a value."""
    if isinstance(value, ast.Lit):
        return _literal(value), "true"
    if not isinstance(value, ast.Path):
        raise NotTranslatable(f"{value.kind} values (resolvers, aggregates, scores, lengths, hosts) are not in Cedar")
    if value.root == "user" and value.parts == ("id",):
        raise NotTranslatable('compare the user with `for user "id"` to export it')
    base, parts = {
        "args": ("context.args", value.parts),
        "user": ("principal.claims", value.parts),
        "agent": ("context.agent", value.parts if value.parts == ("id",) else ("attributes", *value.parts)),
        "context": ("context", {"session": ("session",)}.get(value.parts[0], value.parts) if value.parts else ()),
    }[value.root]
    guards, expression = [], base
    for part in parts:
        guards.append(f"{expression} has {_q(part)}")
        expression = f"{expression}[{_q(part)}]"
    if value.root == "agent" and value.parts == ("id",):
        guards = []
    return expression, " && ".join(guards) or "true"


def _literal(value: ast.Value) -> str:
    if not isinstance(value, ast.Lit):
        raise NotTranslatable("expected a literal")
    literal = value.value
    if isinstance(literal, bool):
        return "true" if literal else "false"
    if isinstance(literal, str):
        return _q(literal)
    if isinstance(literal, float):
        if literal != int(literal):
            raise NotTranslatable("Cedar compares whole numbers only (decimal() has no <, >)")
        literal = int(literal)
    if isinstance(literal, int):
        if not -(2**63) <= literal < 2**63:
            raise NotTranslatable("number outside Cedar's 64-bit range")
        return str(literal)
    raise NotTranslatable("Cedar has no null")


def _q(text: str) -> str:
    return json.dumps(text)


def cedar_request(request: Request) -> tuple[dict[str, object], dict[str, object]]:
    """The Cedar request and principal entity for one of our requests."""
    context: dict[str, object] = {
        "args": request.args,
        "agent": {"id": request.agent.id, "attributes": request.agent.attributes},
    }
    if request.context.tenant is not None:
        context["tenant"] = request.context.tenant
    if request.context.session_id is not None:
        context["session"] = request.context.session_id
    cedar = {
        "principal": entity_uid("User", request.principal.id),
        "action": entity_uid("Action", request.action),
        "resource": entity_uid("Gateway", request.resource or "default"),
        "context": context,
    }
    entity = {
        "uid": entity_uid("User", request.principal.id),
        "attrs": {"roles": sorted(request.principal.roles), "claims": request.principal.attributes},
        "parents": [],
    }
    return cedar, entity
