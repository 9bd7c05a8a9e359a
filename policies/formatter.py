"""``agentcore policy fmt``: print an AST as canonical policy text.

One rule per line, canonical keywords (``exceeds`` becomes ``is more than``), comments kept before the statement
they preceded. Guarantees, tested with Hypothesis: ``parse(fmt(x))`` means the same as ``x`` and ``fmt`` is
idempotent.
"""

from __future__ import annotations

import json
from decimal import Decimal

from agentcore.policies import ast
from agentcore.policies.parser import keyword_words

_OPS = {
    "eq": "is",
    "ne": "is not",
    "gt": "is more than",
    "ge": "is at least",
    "lt": "is less than",
    "le": "is at most",
    "contains": "contains",
    "not_contains": "does not contain",
    "starts_with": "starts with",
    "not_starts_with": "does not start with",
    "ends_with": "ends with",
    "not_ends_with": "does not end with",
    "matches": "matches",
    "not_matches": "does not match",
    "has_role": "has role",
    "not_has_role": "does not have role",
    "one_of": "is one of",
    "not_one_of": "is not one of",
    "between": "is between",
    "not_between": "is not between",
    "missing": "is missing",
    "present": "is present",
}
_REDACTIONS = {"email": "email addresses", "card": "card numbers", "phone": "phone numbers", "ip": "ip addresses"}


def format_file(policy: ast.PolicyFile) -> str:
    """Canonical text of one parsed file."""
    statements: list[tuple[int, str]] = []
    if policy.name is not None:
        header = f"policy {_str(policy.name)}"
        if policy.version is not None:
            header += f" version {policy.version}"
        if policy.owner is not None:
            header += f" owner {_str(policy.owner)}"
        if policy.description is not None:
            header += f" description {_str(policy.description)}"
        statements.append((policy.span.line if policy.span else 0, header + "\n"))
    if policy.default is not None:
        statements.append((_default_line(policy), f"default {policy.default}."))
    statements.extend((rule.span.line if rule.span else 0, format_rule(rule)) for rule in policy.rules)
    statements.sort(key=lambda item: item[0])
    lines: list[str] = []
    comments = list(policy.comments)
    for line, text in statements:
        while comments and comments[0].line <= line:
            lines.append(comments.pop(0).text)
        lines.append(text)
    lines.extend(comment.text for comment in comments)
    return "\n".join(lines).rstrip("\n") + "\n"


def _default_line(policy: ast.PolicyFile) -> int:
    """Defaults carry no span; keep them before the first rule."""
    first = policy.rules[0].span.line if policy.rules and policy.rules[0].span else 1
    return max(first - 1, 0) if policy.name is None else (policy.span.line if policy.span else 0)


def format_rule(rule: ast.Rule) -> str:
    parts = [f"rule {_str(rule.id)}:"] if rule.explicit_id else []
    if rule.monitor:
        parts.append("monitor")
    targets = _targets(rule.targets)
    if rule.kind == "approval":
        parts.append("require approval" + (f" from role {_str(rule.approver)}" if rule.approver else "") + " for")
        parts.append(targets)
    elif rule.kind == "limit" and rule.limit is not None:
        limit = rule.limit
        window = _window(limit.window)
        parts.append(f"limit {targets} to {limit.count} {limit.calls_word} per {window} per {limit.scope}")
    elif rule.kind == "redact":
        parts.append("redact " + " and ".join(_redaction(r) for r in rule.redactions) + f" in results of {targets}")
    elif rule.kind == "suppress":
        parts.append(f"suppress output of {targets}")
    else:
        parts.append(f"{rule.kind} {targets}")
    if rule.subjects:
        parts.append("for " + " and ".join(_subject(s) for s in rule.subjects))
    for clause in rule.clauses:
        text = format_cond(clause.cond)
        parts.append(text if clause.mode == "bare" else f"{clause.mode} {text}")
    return " ".join(parts) + "."


def _subject(subject: ast.Subject) -> str:
    words = {"role": "users with role", "user": "user", "agent": "agent", "tenant": "tenant"}[subject.kind]
    return f"{words} {_str(subject.value)}"


def _redaction(redaction: ast.Redaction) -> str:
    if redaction.kind == "fields":
        return "fields " + ", ".join(_str(f) for f in redaction.fields)
    if redaction.kind == "pattern":
        named = f" as {_str(redaction.name)}" if redaction.name is not None else ""
        return f"pattern {_str(redaction.pattern or '')}{named}"
    return _REDACTIONS[redaction.kind]


def _targets(targets: ast.Targets) -> str:
    if targets.any:
        return "any tool"
    names = ", ".join(targets.names)
    return f"any tool in {names}" if targets.any_phrase else names


def format_cond(cond: ast.Cond) -> str:
    if isinstance(cond, ast.Or):
        return " or ".join(format_cond(item) for item in cond.items)
    if isinstance(cond, ast.And):
        return " and ".join(_paren(item, ast.Or) for item in cond.items)
    if isinstance(cond, ast.Not):
        return "not " + _paren(cond.item, (ast.And, ast.Or))
    if isinstance(cond, ast.TimeWindow):
        text = f"{'outside' if cond.outside else 'during'} {cond.start}-{cond.end}"
        if cond.day_words:
            text += " on " + ", ".join(cond.day_words)
        return text + (f" in {_str(cond.tz)}" if cond.tz is not None else "")
    if isinstance(cond, ast.After):
        scope = ""
        if cond.scope_written:
            scope = " in the same session" if cond.scope == "session" else f" for the same {cond.scope}"
        return f"after {_targets(cond.actions)}{scope} within {_duration(cond.within)}"
    operands = [format_value(v) for v in cond.right]
    joiner = " and " if cond.op in ("between", "not_between") else ", "
    tail = f" {joiner.join(operands)}" if operands else ""
    return f"{format_value(cond.left)} {_OPS[cond.op]}{tail}"


def _paren(cond: ast.Cond, kinds: type | tuple[type, ...]) -> str:
    text = format_cond(cond)
    return f"({text})" if isinstance(cond, kinds) else text


def format_value(value: ast.Value) -> str:
    if isinstance(value, ast.Lit):
        return _literal(value)
    if isinstance(value, ast.Path):
        return _path(value)
    if isinstance(value, ast.Resolve):
        return f"{value.entity}({format_value(value.key)})" + "".join(f".{a}" for a in value.attr)
    if isinstance(value, ast.Length):
        return f"length of {format_value(value.of)}"
    if isinstance(value, ast.Host):
        return f"{format_value(value.of)} host"
    if isinstance(value, ast.Plus):
        terms = (f"({format_value(t)})" if isinstance(t, ast.Plus) else format_value(t) for t in value.terms)
        return " plus ".join(terms)
    if isinstance(value, ast.Sum):
        return (
            f"sum of {'.'.join(value.arg)} over {_targets(value.actions)} in the last {_duration(value.window)}"
            f" per {value.scope}"
        )
    if isinstance(value, ast.Count):
        return f"count of calls to {_targets(value.actions)} in the last {_duration(value.window)} per {value.scope}"
    if isinstance(value, ast.Spend):
        window = f"in the last {_duration(value.window)}" if value.window else "today"
        return f"accelerator spend of {value.scope} {window}"
    source = "arguments" if value.source is None else format_value(value.source)
    return f"{_str(value.detector)} score of {source}"


def _path(path: ast.Path) -> str:
    if path.root != "args":
        return ".".join((path.root, *path.parts))
    first = path.parts[0] if path.parts else ""
    needs_root = first in ast.PATH_ROOTS or first in keyword_words() or not path.parts
    return ".".join(("args", *path.parts)) if needs_root else ".".join(path.parts)


def _literal(literal: ast.Lit) -> str:
    value = literal.value
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, str):
        text = _str(value)
    elif isinstance(value, float):
        text = format(Decimal(repr(value)), "f")
        text = text if "." in text else text + ".0"
    else:
        text = str(value)
    return f"{text} {literal.currency}" if literal.currency else text


def _duration(duration: ast.Duration) -> str:
    amount = int(duration.amount) if duration.amount == int(duration.amount) else duration.amount
    return f"{_number(amount)} {duration.unit}{'' if amount == 1 else 's'}"


def _window(duration: ast.Duration) -> str:
    return duration.unit if duration.amount == 1 else _duration(duration)


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return format(Decimal(repr(value)), "f")


def _str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
