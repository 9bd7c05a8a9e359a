"""``agentcore policy fmt``: print an AST as canonical policy text that keeps the author's layout.

Canonical keywords (``exceeds`` becomes ``is more than``); one statement per block, on one line when it fits the
width, else broken at clause boundaries (``for``, ``when``, ``unless``), then at ``and``/``or``, lists wrapping
like paragraphs; one blank line where the source had blank lines between statements; each comment kept before
the statement it preceded or sat in. Every node prints through :func:`doc` (one table, ``_DOCS``), so a new node
type needs one entry. Guarantees, tested with Hypothesis: ``parse(fmt(x))`` means the same as ``x`` and ``fmt`` is
idempotent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentcore.policies import ast
from agentcore.policies.layout import LINE, Doc, Group, Nest, fill, join, render
from agentcore.policies.parser import keyword_words

DEFAULT_WIDTH = 100
INDENT = 4

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
    "before": "is before",
    "later": "is after",
}
_WITHIN = {"within_before": "before", "within_after": "after", "within_of": "of"}
_REDACTIONS = {
    "email": "email addresses",
    "card": "card numbers",
    "phone": "phone numbers",
    "ip": "ip addresses",
    "iban": "IBANs",
    "secret": "secrets",
}


@dataclass(frozen=True)
class _Block:
    """One printed unit (a statement or a comment) and the source lines it came from."""

    line: int
    end_line: int
    text: str


def format_file(policy: ast.PolicyFile, width: int = DEFAULT_WIDTH) -> str:
    """Canonical text of one parsed file, wrapped at ``width`` columns where the language allows a break."""
    if width < 20:
        raise ValueError(f"width must be at least 20 columns, got {width}")
    statements = sorted(_statements(policy, width), key=lambda block: block.line)
    comments = sorted(policy.comments, key=lambda comment: comment.line)
    covered = {n for block in statements for n in range(block.line, block.end_line + 1)}
    covered.update(comment.line for comment in comments)
    blocks: list[_Block] = []
    for statement in statements:
        while comments and comments[0].line <= statement.end_line:  # before it, or inside it: moved before it
            comment = comments.pop(0)
            blocks.append(_Block(comment.line, comment.line, comment.text))
        blocks.append(statement)
    blocks.extend(_Block(comment.line, comment.line, comment.text) for comment in comments)
    out: list[str] = []
    for previous, block in zip([None, *blocks], blocks, strict=False):
        if previous is not None and any(n not in covered for n in range(previous.end_line + 1, block.line)):
            out.append("")
        out.append(block.text)
    return "\n".join(out) + "\n" if out else ""


def _statements(policy: ast.PolicyFile, width: int) -> list[_Block]:
    blocks = []
    if policy.name is not None:
        blocks.append(_block(policy.header_span, _header(policy), width))
    if policy.default is not None:
        blocks.append(_block(policy.default_span, f"default {policy.default}.", width))
    blocks.extend(_block(rule.span, doc(rule), width) for rule in policy.rules)
    blocks.extend(_block(node.span, doc(node), width) for node in (*policy.definitions, *policy.resolvers))
    return blocks


def _block(span: ast.Span | None, document: Doc, width: int) -> _Block:
    line, end = (span.line, span.end_line) if span is not None else (0, 0)
    return _Block(line, end, render(Group(document), width))


def _header(policy: ast.PolicyFile) -> Doc:
    fields: list[Doc] = []
    if policy.version is not None:
        fields.append(f"version {policy.version}")
    if policy.owner is not None:
        fields.append(f"owner {_str(policy.owner)}")
    if policy.description is not None:
        fields.append(f"description {_str(policy.description)}")
    return (f"policy {_str(policy.name or '')}", Nest(INDENT, tuple((LINE, field) for field in fields)))


def doc(node: ast.Node) -> Doc:
    """The document of any AST node: the single dispatch every printer goes through."""
    return _DOCS[type(node)](node)


# ---- rules ----------------------------------------------------------------------------------------------------
def _rule(rule: ast.Rule) -> Doc:
    head: list[Doc] = [f"rule {_str(rule.id)}: "] if rule.explicit_id else []
    if rule.monitor:
        head.append("monitor ")
    targets = doc(rule.targets)
    if rule.kind == "approval":
        approver = f" from role {_str(rule.approver)}" if rule.approver else ""
        head.append((f"require approval{approver} for ", targets))
    elif rule.kind == "limit" and rule.limit is not None:
        limit = rule.limit
        head.append(("limit ", targets, f" to {limit.count} {limit.calls_word} per {_window(limit.window)}"))
        head.append(f" per {limit.scope}")
    elif rule.kind == "redact":
        redactions = join((doc(r) for r in rule.redactions), (LINE, "and "))
        head.append(("redact ", Group(redactions), " in results of ", targets))
    elif rule.kind == "suppress":
        head.append(("suppress output of ", targets))
    else:
        head.append((f"{rule.kind} ", targets))
    tail: list[Doc] = []
    if rule.subjects:
        tail.append(("for ", join((doc(s) for s in rule.subjects), " and ")))
    tail.extend(doc(clause) for clause in rule.clauses)
    return Nest(INDENT, (tuple(head), tuple((LINE, part) for part in tail), "."))


def _clause(clause: ast.Clause) -> Doc:
    body = doc(clause.cond)
    return body if clause.mode == "bare" else (f"{clause.mode} ", Nest(INDENT, body))


def _subject(subject: ast.Subject) -> Doc:
    words = {"role": "users with role", "user": "user", "agent": "agent", "tenant": "tenant"}[subject.kind]
    return f"{words} {_str(subject.value)}"


def _redaction(redaction: ast.Redaction) -> Doc:
    if redaction.kind == "fields":
        return ("fields ", fill(_str(f) for f in redaction.fields))
    if redaction.kind == "pattern":
        named = f" as {_str(redaction.name)}" if redaction.name is not None else ""
        return f"pattern {_str(redaction.pattern or '')}{named}"
    return _REDACTIONS[redaction.kind]


def _targets(targets: ast.Targets) -> Doc:
    if targets.any:
        return "any tool"
    names = fill(targets.names)
    return ("any tool in ", names) if targets.any_phrase else names


# ---- conditions -----------------------------------------------------------------------------------------------
# A quantifier's condition runs to the end of the clause, so a quantifier that is not last is parenthesised.
def _or(cond: ast.Or) -> Doc:
    return Group(join((_paren(item, ast.Quantified) for item in cond.items), (LINE, "or ")))


def _and(cond: ast.And) -> Doc:
    if cond.chained:  # `amount is more than 5 and is less than 9`: the value once, then each bound
        first, *bounds = cond.items
        return Group((doc(first), *((LINE, "and ", _bound(b)) for b in bounds if isinstance(b, ast.Compare))))
    return Group(join((_paren(item, (ast.Or, ast.Quantified)) for item in cond.items), (LINE, "and ")))


def _not(cond: ast.Not) -> Doc:
    return ("not ", _paren(cond.item, (ast.And, ast.Or, ast.Quantified)))


def _paren(cond: ast.Cond, kinds: type | tuple[type, ...]) -> Doc:
    inner = doc(cond)
    return ("(", Nest(1, inner), ")") if isinstance(cond, kinds) else inner


def _bound(cond: ast.Compare) -> Doc:
    """A further bound of a chain (always one operand: the grammar chains ordered comparisons only)."""
    return (_OPS[cond.op], " ", doc(cond.right[0]))


def _compare(cond: ast.Compare) -> Doc:
    operands = [doc(v) for v in cond.right]
    if cond.op in _WITHIN:
        return (doc(cond.left), " is within ", operands[0], f" {_WITHIN[cond.op]} ", operands[1])
    if cond.op in ("between", "not_between"):
        tail: Doc = (" ", join(operands, " and "))
    elif operands:  # a list may wrap before its first item; a single operand stays with its operator
        tail = Nest(INDENT, fill(operands, lead=True)) if len(operands) > 1 else (" ", operands[0])
    else:
        tail = ""
    return (doc(cond.left), f" {_OPS[cond.op]}", tail)


def _time_window(cond: ast.TimeWindow) -> Doc:
    text = f"{'outside' if cond.outside else 'during'} {cond.start}-{cond.end}"
    if cond.day_words:
        text += " on " + ", ".join(cond.day_words)
    return text + (f" in {_str(cond.tz)}" if cond.tz is not None else "")


def _after(cond: ast.After) -> Doc:
    scope = ""
    if cond.scope_written:
        scope = " in the same session" if cond.scope == "session" else f" for the same {cond.scope}"
    return ("after ", doc(cond.actions), f"{scope} within {_duration(cond.within)}")


# ---- values ---------------------------------------------------------------------------------------------------
def _resolve(value: ast.Resolve) -> Doc:
    return (
        f"{value.entity}(",
        join((doc(key) for key in value.keys), ", "),
        ")" + "".join(f".{a}" for a in value.attr),
    )


def _length(value: ast.Length) -> Doc:
    return ("length of ", doc(value.of))


def _host(value: ast.Host) -> Doc:
    return (doc(value.of), " host")


def _plus(value: ast.Plus) -> Doc:
    first, *rest = value.terms
    terms = [_operand(first, 1, left=True), *(_operand(t, 1, left=False) for t in rest)]
    return Group(join(terms, (LINE, "plus ")))


def _sum(value: ast.Sum) -> Doc:
    window = f" in the last {_duration(value.window)} per {value.scope}"
    return (f"sum of {'.'.join(value.arg)} over ", doc(value.actions), window)


def _count(value: ast.Count) -> Doc:
    return ("count of calls to ", doc(value.actions), f" in the last {_duration(value.window)} per {value.scope}")


def _spend(value: ast.Spend) -> Doc:
    window = f"in the last {_duration(value.window)}" if value.window else "today"
    return f"accelerator spend of {value.scope} {window}"


def _score(value: ast.Score) -> Doc:
    source = "arguments" if value.source is None else doc(value.source)
    return (f"{_str(value.detector)} score of ", source)


def _path(path: ast.Path) -> Doc:
    if path.root != "args":
        return ".".join((path.root, *path.parts))
    first = path.parts[0] if path.parts else ""
    needs_root = first in ast.PATH_ROOTS or first in keyword_words() or not path.parts
    return ".".join(("args", *path.parts)) if needs_root else ".".join(path.parts)


def _literal(literal: ast.Lit) -> Doc:
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
    """Also the document of a duration value (``14 days``)."""
    amount = int(duration.amount) if duration.amount == int(duration.amount) else duration.amount
    return f"{_number(amount)} {duration.unit}{'' if amount == 1 else 's'}"


def _window(duration: ast.Duration) -> str:
    return duration.unit if duration.amount == 1 else _duration(duration)


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return format(Decimal(repr(value)), "f")


# ---- policy language v2: declarations, arithmetic and time ----------------------------------------------------
_PRECEDENCE = {"plus": 1, "minus": 1, "times": 2, "divided": 2}
_ARITH_WORDS = {"plus": "plus", "minus": "minus", "times": "times", "divided": "divided by"}


def _resolver(decl: ast.ResolverDecl) -> Doc:
    params = join(((f"{p.name}: ", _type(p.type)) for p in decl.params), ", ")
    return Nest(INDENT, (f"resolver {decl.name}(", params, ") returns", LINE, _type(decl.returns), "."))


def _type(expr: ast.TypeExpr) -> Doc:
    if expr.name == "list" and expr.item is not None:
        return ("list of ", _type(expr.item))
    if expr.name == "record":
        return ("{", Nest(1, fill((f"{name}: ", _type(item)) for name, item in expr.fields)), "}")
    return expr.name


def _arith(value: ast.Arith) -> Doc:
    precedence = _PRECEDENCE[value.op]
    left, right = _operand(value.left, precedence, left=True), _operand(value.right, precedence, left=False)
    return Group((left, LINE, f"{_ARITH_WORDS[value.op]} ", right))


def _operand(value: ast.Value, precedence: int, left: bool) -> Doc:
    """An operand of arithmetic, in parentheses where the grammar would otherwise group it differently."""
    inner = 1 if isinstance(value, ast.Plus) else _PRECEDENCE[value.op] if isinstance(value, ast.Arith) else 3
    greedy = isinstance(value, ast.Fold)  # (count of ... where ...) brings its own parentheses
    wrap = greedy or inner < precedence or (inner == precedence and not left)
    return ("(", doc(value), ")") if wrap else doc(value)


def _term(value: ast.Value) -> Doc:
    """A value where the grammar wants one term (the list of a quantifier, the time of a weekday)."""
    return ("(", doc(value), ")") if isinstance(value, (ast.Plus, ast.Arith, ast.Fold)) else doc(value)


def _calendar(value: ast.Calendar) -> Doc:
    words = "weekday of " if value.part == "weekday" else "time of day of "
    return (words, _term(value.of), f" in {_str(value.tz)}" if value.tz is not None else "")


def _str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


_DOCS: dict[type, Callable[[Any], Doc]] = {
    ast.Rule: _rule,
    ast.Clause: _clause,
    ast.Subject: _subject,
    ast.Redaction: _redaction,
    ast.Targets: _targets,
    ast.Or: _or,
    ast.And: _and,
    ast.Not: _not,
    ast.Compare: _compare,
    ast.TimeWindow: _time_window,
    ast.After: _after,
    ast.Lit: _literal,
    ast.Path: _path,
    ast.Resolve: _resolve,
    ast.Length: _length,
    ast.Host: _host,
    ast.Plus: _plus,
    ast.Sum: _sum,
    ast.Count: _count,
    ast.Spend: _spend,
    ast.Score: _score,
    ast.Quantified: lambda c: (f"{c.quantifier} {c.var} in ", _term(c.over), " has ", doc(c.cond)),
    ast.Named: lambda c: _str(c.name),
    ast.IfPresent: lambda c: (doc(c.item), " if present"),
    ast.Definition: lambda d: Nest(INDENT, (f"define {_str(d.name)} as", LINE, doc(d.cond), ".")),
    ast.ResolverDecl: _resolver,
    ast.Var: lambda v: ".".join((v.name, *v.parts)),
    ast.Arith: _arith,
    ast.Function: lambda v: (f"{v.name}(", join((doc(a) for a in v.args), ", "), ")"),
    ast.Fold: lambda v: (f"{v.op} of ", doc(v.value), f" for {v.var} in ", _term(v.over)),
    ast.CountWhere: lambda v: (f"(count of {v.var} in ", _term(v.over), " where ", doc(v.cond), ")"),
    ast.Now: lambda v: "now",
    ast.Today: lambda v: "today" + (f" in {_str(v.tz)}" if v.tz is not None else ""),
    ast.Clock: lambda v: v.text,
    ast.Calendar: _calendar,
    ast.Duration: _duration,
}
