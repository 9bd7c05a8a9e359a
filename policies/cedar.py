"""Cedar export (``agentcore policy export --cedar``), never more permissive than the bundle.

Request mapping (:func:`cedar_request`): principal ``User::"<id>"`` with attributes ``roles`` (set) and ``claims``
(record); action ``Action::"<tool>"``; resource ``Gateway::"<resource or default>"``; context ``{args, agent: {id,
attributes}, tool, types, tenant?, session?, resource?}``. Every number is a Cedar ``decimal`` (the language
compares numbers by value, so ``1`` and ``1.0`` are one number), lists are sets, objects are records.
``context.types`` maps each value's path (:func:`type_key`: ``"args/customer/tier"``) to its type.

Allow rules become ``permit``, deny rules ``forbid``, approval rules ``forbid`` annotated
``@effect("needs_approval")`` (Cedar has no approval, so "not allowed" is what agrees). Fail-closed semantics
survive: each condition is translated into "definitely true" and "definitely false" expressions, so a permit
needs its condition definitely true and a forbid applies unless its condition is definitely false. Cedar ignores
a policy whose evaluation errors (``"1000".greaterThan(...)``), which for a forbid is an allow, so no exported
expression can error: each test first checks in ``context.types`` that its values exist and have the type it
needs, and is otherwise neither true nor false, as it is unevaluable in the engine. ``x contains "text"`` is a
text test on text and a membership test on a set. A forbid of a tool pattern (``crm.*``) matches
``context.tool`` with ``like``, so it covers tools missing from the tool list.

Language v2 constructs are translated where Cedar says the same thing: named conditions are inlined, ``if
present`` becomes a presence guard that makes the comparison false instead of unevaluable, arithmetic and
``min``/``max``/``abs`` on literals are computed at export (Cedar's ``decimal`` has no arithmetic, so arithmetic
on request values is refused), and a quantifier over a list argument whose condition tests the item's membership
in literals (``every tag in tags has tag is one of "a", "b"``) becomes a set test (``containsAll`` /
``containsAny``). Quantifiers over the fields of items, sums, counts, dates and lookups have no Cedar form.

Leaving a rule out is safe only when the Cedar set then allows less: an untranslatable allow rule (or a monitor
rule, which never changes a decision) is left out and reported; an untranslatable deny, approval, limit, redact
or suppress rule makes the export refuse (:class:`CedarExportError`), because without it Cedar would allow or
reveal what the bundle does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentcore.policies import ast
from agentcore.policies.engine import NO_CONTEXT
from agentcore.policies.errors import PolicyError, Problem
from agentcore.policies.model import Principal, Request
from agentcore.policies.named import definitions_of
from agentcore.policies.values import (
    Env,
    Unevaluable,
    ValueCompileError,
    compile_value,
    equality_key,
    is_number,
)
from agentcore.text import canonical_text

_DECIMAL_LIMIT = Decimal("922337203685477.5807")  # Cedar decimals: a 64-bit integer of ten-thousandths
_TEN_THOUSANDTH = Decimal("0.0001")


class NotTranslatable(Exception):
    """A rule uses something Cedar cannot express."""


class CedarExportError(PolicyError):
    """The bundle has rules whose absence would make the Cedar policy set more permissive than the bundle."""


class CedarPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)
    rule_id: str
    tools: tuple[str, ...] | None  # None: every tool
    text: str


class Skipped(BaseModel):
    """A rule left out of the export; ``safe`` when Cedar allows less without it (an allow or monitor rule)."""

    model_config = ConfigDict(frozen=True)
    rule_id: str
    file: str
    line: int
    column: int = 0
    why: str
    safe: bool = False


class CedarExport(BaseModel):
    model_config = ConfigDict(frozen=True)
    policies: tuple[CedarPolicy, ...]
    skipped: tuple[Skipped, ...]

    @property
    def refused(self) -> tuple[Skipped, ...]:
        """The rules whose absence would make Cedar more permissive: while any exist there is no Cedar text."""
        return tuple(s for s in self.skipped if not s.safe)

    @property
    def text(self) -> str:
        """The Cedar policy set; raises :class:`CedarExportError` listing every refused rule instead of failing open."""
        if self.refused:
            raise CedarExportError([_problem(s) for s in self.refused])
        return "\n\n".join(p.text for p in self.policies) + "\n"

    @property
    def lossy_text(self) -> str:
        """The Cedar policy set even with refused rules left out (opt-in: Cedar then allows more than the bundle),
        each loss a ``// LOSSY`` comment at the top, so the text never hides what it leaves out."""
        losses = [f"// LOSSY (Cedar allows more): {_printable_comment(_where(s))}" for s in self.refused]
        body = "\n\n".join(p.text for p in self.policies) + "\n"
        return "\n".join(losses) + ("\n\n" if losses else "") + body


def _where(skipped: Skipped) -> str:
    return f"{skipped.file}:{skipped.line}: left out [{skipped.rule_id}]: {skipped.why}"


def _printable_comment(text: str) -> str:
    """``text`` on one comment line: a newline in a file name or rule id would end the comment and write Cedar."""
    return "".join(c if c.isprintable() else f"\\u{{{ord(c):x}}}" for c in text)


def _problem(skipped: Skipped) -> Problem:
    return Problem(
        f"cannot export rule `{skipped.rule_id}` to Cedar: {skipped.why}",
        skipped.file,
        skipped.line,
        skipped.column,
        help="without it the Cedar policies would be more permissive than the bundle; rewrite it or do not use Cedar",
    )


def export(files: Sequence[ast.PolicyFile], tools: Sequence[str] | None = None) -> CedarExport:
    """Translate a parsed bundle; ``tools`` (all tool names) is needed to expand glob patterns."""
    definitions = definitions_of(files)
    policies: list[CedarPolicy] = []
    skipped = []
    defaults = {f.default for f in files if f.default}
    if defaults == {"allow"}:
        policies.append(
            CedarPolicy(rule_id="default", tools=None, text='@id("default")\npermit(principal, action, resource);')
        )
    for rule in (r for f in files for r in f.rules):
        try:
            policies.extend(_rule(rule, tools, definitions))
        except NotTranslatable as why:
            span = rule.span
            skipped.append(
                Skipped(
                    rule_id=rule.id,
                    file=span.file if span else "",
                    line=span.line if span else 0,
                    column=span.column if span else 0,
                    why=str(why),
                    safe=rule.monitor or rule.kind == "allow",
                )
            )
    if any("context.types" in p.text or "context.tool" in p.text for p in policies):
        policies.insert(0, _MAPPING)
    return CedarExport(policies=tuple(policies), skipped=tuple(skipped))


# Without the type record (or the tool's name) a forbid's guard would error (or not match), and Cedar would ignore
# the forbid: a request built without them (not by :func:`cedar_request`) is denied instead.
_MAPPING = CedarPolicy(
    rule_id="request-mapping",
    tools=None,
    text='@id("request-mapping")\nforbid(principal, action, resource)\n'
    "unless { context has types && context has tool };",
)


def entity_uid(kind: str, name: str) -> dict[str, str]:
    return {"type": kind, "id": name}


def _rule(rule: ast.Rule, tools: Sequence[str] | None, definitions: Mapping[str, ast.Definition]) -> list[CedarPolicy]:
    if rule.monitor:
        raise NotTranslatable("monitor rules are log-only; Cedar has no log-only policies (leaving it out is exact)")
    if rule.kind in ("redact", "suppress"):
        raise NotTranslatable("Cedar decides allow or deny only; without this obligation results would be revealed")
    if rule.kind == "limit":
        raise NotTranslatable("rate limits count earlier calls, state Cedar does not have")
    if rule.kind != "allow" and any("*" in name for name in rule.targets.names):
        # a forbid matches the patterns themselves, so a tool missing from the tool list is denied too
        exact = [name for name in rule.targets.names if "*" not in name]
        globs = [f"context.tool like {_q(name)}" for name in rule.targets.names if "*" in name]
        tool = " || ".join([*(f"action == Action::{_q(n)}" for n in exact), *globs])
        text = _policy(rule, "action", definitions, tool=f"context has tool && ({tool})")
        return [CedarPolicy(rule_id=rule.id, tools=None, text=text)]
    names = _action_names(rule.targets, tools)
    scope = "action" if names is None else (
        f"action == Action::{_q(names[0])}" if len(names) == 1 else
        "action in [" + ", ".join(f"Action::{_q(n)}" for n in names) + "]"
    )  # fmt: skip
    text = _policy(rule, scope, definitions)
    return [CedarPolicy(rule_id=rule.id, tools=None if names is None else tuple(names), text=text)]


def _is_text_contains(cond: ast.Compare) -> bool:
    operand = cond.right[0] if cond.right else None
    return cond.op in ("contains", "not_contains") and isinstance(operand, ast.Lit) and isinstance(operand.value, str)


def _policy(rule: ast.Rule, scope: str, definitions: Mapping[str, ast.Definition], tool: str = "") -> str:
    """The rule's Cedar policy; ``tool``, when given, is a forbid's test of the tool's name."""
    translate = _Conditions(definitions)
    annotations = [f"@id({_q(rule.id)})"]
    pairs = [translate.cond(clause.cond) for clause in rule.clauses]
    subjects = [_subject(s) for s in rule.subjects]
    if rule.kind == "allow":
        parts = subjects + [no if c.mode == "unless" else yes for c, (yes, no) in zip(rule.clauses, pairs, strict=True)]
        when = " && ".join(f"({p})" for p in parts)
        body = f"permit(principal, {scope}, resource)" + (f"\nwhen {{ {when} }}" if parts else "")
    else:
        if rule.kind == "approval":
            annotations.append('@effect("needs_approval")')
            if rule.approver:
                annotations.append(f"@approver({_q(rule.approver)})")
        # definitely false: any subject fails, or any clause is definitely not satisfied
        parts = [f"!({s})" for s in subjects]
        parts += [yes if c.mode == "unless" else no for c, (yes, no) in zip(rule.clauses, pairs, strict=True)]
        unless = " || ".join(f"({p})" for p in parts)
        body = f"forbid(principal, {scope}, resource)" + (f"\nwhen {{ {tool} }}" if tool else "")
        body += f"\nunless {{ {unless} }}" if parts else ""
    return "\n".join([*annotations, body]) + ";"


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
    value = _q(canonical_text(subject.value))  # requests reach Cedar canonical, as they reach the engine
    if subject.kind == "role":
        return f"principal.roles.contains({value})"
    if subject.kind == "user":
        return f"principal == User::{value}"
    if subject.kind == "agent":
        return f"context.agent.id == {value}"
    return f"context has tenant && context.tenant == {value}"


class _Conditions:
    """Translates conditions into Cedar expressions that never error (Cedar ignores a policy that errors, which
    for a ``forbid`` is an allow): each test first checks, in ``context.types``, that its values exist and have the
    type it needs; otherwise it is unevaluable, as in the engine."""

    def __init__(self, definitions: Mapping[str, ast.Definition]) -> None:
        self._definitions = definitions

    def cond(self, cond: ast.Cond) -> tuple[str, str]:
        """(definitely true, definitely false) Cedar expressions for a condition, Kleene logic preserved."""
        if isinstance(cond, ast.Not):
            sure_true, sure_false = self.cond(cond.item)
            return sure_false, sure_true
        if isinstance(cond, (ast.And, ast.Or)):
            pairs = [self.cond(item) for item in cond.items]
            trues = [f"({t})" for t, _ in pairs]
            falses = [f"({f})" for _, f in pairs]
            if isinstance(cond, ast.And):
                return " && ".join(trues), " || ".join(falses)
            return " || ".join(trues), " && ".join(falses)
        if isinstance(cond, (ast.TimeWindow, ast.After)):
            raise NotTranslatable("time windows and sequence rules depend on the clock and state Cedar does not have")
        if isinstance(cond, ast.Named):
            definition = self._definitions.get(cond.name)
            if definition is None:
                raise NotTranslatable(f'no condition is named "{cond.name}"')
            return self.cond(definition.cond)
        if isinstance(cond, ast.IfPresent):
            present, defined, test = self._compare(cond.item)
            # absent: false, not unevaluable; present with another type: unevaluable, as in the engine
            return _and(defined, test), _or(_not(present), _and(defined, _not(test)))
        _, defined, test = self._quantified(cond) if isinstance(cond, ast.Quantified) else self._compare(cond)
        return _and(defined, test), _and(defined, _not(test))

    def _quantified(self, cond: ast.Quantified) -> tuple[str, str, str]:
        """``any|every|no X in LIST has X is one of ...`` as a set test on the list (Cedar has no quantifiers)."""
        if not isinstance(cond.over, ast.Path):  # a literal is no list: ours fails closed, Cedar would error
            raise NotTranslatable("a quantifier is exported only over a list argument or attribute")
        listed, key = _value(cond.over)
        member, literals = _membership(cond.cond, cond.var)
        values = "[" + ", ".join(_literal(v) for v in literals.values()) + "]"
        some_in, all_in = f"{listed}.containsAny({values})", f"{values}.containsAll({listed})"
        holds = {  # (quantifier, the item is in the literals) -> the set test
            ("any", True): some_in, ("every", True): all_in, ("no", True): f"!({some_in})",
            ("any", False): f"!({all_in})", ("every", False): f"!({some_in})", ("no", False): all_in,
        }  # fmt: skip
        return _present([key]), _typed([key], "set"), holds[(cond.quantifier, member)]

    def _compare(self, cond: ast.Compare) -> tuple[str, str, str]:
        """(its values are present, they have the types the test needs, the test) for a comparison."""
        cond = cond.model_copy(update={"left": _folded(cond.left), "right": tuple(map(_folded, cond.right))})
        if cond.op in ("has_role", "not_has_role"):
            test = f"principal.roles.contains({_literal(cond.right[0])})"
            return "true", "true", test if cond.op == "has_role" else _not(test)
        left, left_key = _value(cond.left)
        if cond.op in ("missing", "present"):
            present = _present([left_key])
            return "true", "true", (_not(present) if cond.op == "missing" else present)
        if cond.op in ("matches", "not_matches"):
            raise NotTranslatable("Cedar has no regular expressions")
        positive = {"ne": "eq"}.get(cond.op, cond.op.removeprefix("not_"))
        if positive in ("eq", "one_of", "contains") and not all(isinstance(v, ast.Lit) for v in cond.right):
            raise NotTranslatable(
                "comparing two values is exact in Cedar only for literals (Cedar's sets are unordered, lists are not)"
            )
        rights = [_value(v) for v in cond.right]
        keys = [left_key, *(k for _, k in rights)]
        present = _present(keys)
        values = [v for v, _ in rights]
        defined = present  # `is` and `is one of` compare values of any types
        if positive == "eq":
            test = f"{left} == {values[0]}"
        elif positive in ("gt", "ge", "lt", "le"):
            method = {"gt": "greaterThan", "ge": "greaterThanOrEqual", "lt": "lessThan", "le": "lessThanOrEqual"}
            test = f"{_number(cond.left, left)}.{method[positive]}({_number(cond.right[0], values[0])})"
            defined = _typed(keys, "decimal")
        elif positive == "between":
            left = _number(cond.left, left)
            low, high = (_number(node, text) for node, text in zip(cond.right, values, strict=True))
            test = f"{left}.greaterThanOrEqual({low}) && {left}.lessThanOrEqual({high})"
            defined = _typed(keys, "decimal")
        elif positive == "one_of":
            test = f"[{', '.join(values)}].contains({left})"
        elif positive == "contains" and not _is_text_contains(cond):
            test = f"{left}.contains({values[0]})"
            defined = _typed([left_key], "set")
        elif positive in ("contains", "starts_with", "ends_with"):
            literal = cond.right[0]
            if not isinstance(literal, ast.Lit) or not isinstance(literal.value, str):
                raise NotTranslatable("text tests against a non-literal cannot be written with Cedar's `like`")
            escaped = _escaped(canonical_text(literal.value)).replace("*", "\\*")
            pattern = {"contains": f"*{escaped}*", "starts_with": f"{escaped}*", "ends_with": f"*{escaped}"}
            test = f'{left} like "{pattern[positive]}"'
            defined = _typed([left_key], "string")
            if positive == "contains":  # a text test on text, a membership test on a list
                as_set = f"{left}.contains({values[0]})"
                test = _or(_and(_typed([left_key], "string"), test), _and(_typed([left_key], "set"), as_set))
                defined = _or(defined, _typed([left_key], "set"))
        else:
            raise NotTranslatable(f"`{cond.op}` has no Cedar equivalent")
        return present, defined, _not(test) if positive != cond.op else test


def _and(a: str, b: str) -> str:
    return b if a == "true" else a if b == "true" else f"({a}) && ({b})"


def _or(a: str, b: str) -> str:
    return "true" if "true" in (a, b) else f"({a}) || ({b})"


def _not(a: str) -> str:
    return f"!({a})"


def _present(keys: Sequence[str | None]) -> str:
    """The values at ``keys`` exist (``None``: a literal, or a value every request has)."""
    return " && ".join(f"context.types has {_q(k)}" for k in keys if k is not None) or "true"


def _typed(keys: Sequence[str | None], kind: str) -> str:
    """The values at ``keys`` exist and are of ``kind``; a literal's type is checked at export."""
    return " && ".join(f"context.types has {_q(k)} && context.types[{_q(k)}] == {_q(kind)}"
                       for k in keys if k is not None) or "true"  # fmt: skip


def _membership(cond: ast.Cond, var: str) -> tuple[bool, dict[Any, ast.Lit]]:
    """A quantifier's condition on its item as (True, S): the item is one of S, or (False, S): it is none of S.

    ``not``, ``and`` and ``or`` of such tests are one such test again (set algebra on the literals)."""
    if isinstance(cond, ast.Not):
        member, literals = _membership(cond.item, var)
        return not member, literals
    if isinstance(cond, (ast.And, ast.Or)):
        member, literals = _membership(cond.items[0], var)
        for item in cond.items[1:]:
            other, more = _membership(item, var)
            member, literals = (_both if isinstance(cond, ast.And) else _either)(member, literals, other, more)
        return member, literals
    if (
        isinstance(cond, ast.Compare)
        and cond.op in ("eq", "ne", "one_of", "not_one_of")
        and isinstance(cond.left, ast.Var)
        and cond.left.name == var
        and not cond.left.parts
        and all(isinstance(v, ast.Lit) for v in cond.right)
    ):
        literals = {equality_key(_constant(v)): v for v in cond.right if isinstance(v, ast.Lit)}
        return cond.op in ("eq", "one_of"), literals
    raise NotTranslatable(
        "a quantifier is exported only when it tests whether the item is one of some literals (a set test); "
        "Cedar cannot look inside the items of a set"
    )


Literals = dict[Any, ast.Lit]


def _both(a: bool, s: Literals, b: bool, t: Literals) -> tuple[bool, Literals]:
    """``item in/not in s and item in/not in t`` as one membership test."""
    if a and b:
        return True, {k: v for k, v in s.items() if k in t}
    if a or b:
        inside, outside = (s, t) if a else (t, s)
        return True, {k: v for k, v in inside.items() if k not in outside}
    return False, {**s, **t}


def _either(a: bool, s: Literals, b: bool, t: Literals) -> tuple[bool, Literals]:
    """``item in/not in s or item in/not in t``: the complement of both complements."""
    member, literals = _both(not a, s, not b, t)
    return not member, literals


def _constant(literal: ast.Lit) -> Any:
    return canonical_text(literal.value) if isinstance(literal.value, str) else literal.value


def _number(node: ast.Value, text: str) -> str:
    """An operand of an ordered comparison: a decimal literal, or a value that must hold a number."""
    if isinstance(node, ast.Lit) and (isinstance(node.value, (bool, str)) or node.value is None):
        raise NotTranslatable("an ordered comparison with a non-number always fails closed, which Cedar cannot say")
    return text


def _value(value: ast.Value) -> tuple[str, str | None]:
    """(Cedar expression, its key in ``context.types``) for a value; the key is ``None`` for a literal."""
    if isinstance(value, ast.Lit):
        return _literal(value), None
    if isinstance(value, (ast.Plus, ast.Arith, ast.Function)):
        return _literal(_computed(value)), None
    if not isinstance(value, ast.Path):
        raise NotTranslatable(f"{value.kind} values (resolvers, aggregates, dates, scores, lengths, hosts) are not "
                              "in Cedar")  # fmt: skip
    if value.root == "user" and value.parts == ("id",):
        raise NotTranslatable('compare the user with `for user "id"` to export it')
    if value.root == "user" and not value.parts:
        raise NotTranslatable("the user is no value Cedar can compare")
    if any(part.isdigit() for part in value.parts):
        raise NotTranslatable("list items are addressed by position, and Cedar's sets have no positions")
    key = type_key(value.root, value.parts)
    if value.root == "user" and value.parts == ("roles",):
        return "principal.roles", key  # the caller's roles, not a claim named roles
    if value.root == "agent" and value.parts == ("id",):
        return "context.agent.id", key
    base, parts = {
        "args": ("context.args", value.parts),
        "user": ("principal.claims", value.parts),
        "agent": ("context.agent.attributes", value.parts),
        "context": ("context", value.parts),
    }[value.root]
    return base + "".join(f"[{_q(part)}]" for part in parts), key


def type_key(root: str, parts: Sequence[str]) -> str:
    """The key of a value in the request's ``context.types``: its path, each part escaped as in a JSON pointer
    (``~`` as ``~0``, ``/`` as ``~1``), so no argument name can spell another value's key."""
    return "/".join(part.replace("~", "~0").replace("/", "~1") for part in (root, *parts))


_NO_REQUEST = Request(principal=Principal(id="cedar.export"), action="cedar.export")  # literals read nothing


def _computed(value: ast.Plus | ast.Arith | ast.Function) -> ast.Lit:
    """Arithmetic on literals, computed now: Cedar's ``decimal`` has no arithmetic, so nothing else is exported."""
    if any(isinstance(node, (ast.Path, ast.Var, ast.Resolve)) for node in nodes(value)):
        raise NotTranslatable("arithmetic on request values: Cedar's decimal type has no arithmetic")
    try:
        result = compile_value(value)(Env(_NO_REQUEST, NO_CONTEXT))
    except (Unevaluable, ValueCompileError) as error:
        raise NotTranslatable(f"the arithmetic cannot be computed: {error}") from None
    if not is_number(result) and not isinstance(result, Decimal):
        raise NotTranslatable("only arithmetic on numbers is exported (Cedar has no dates or durations here)")
    return ast.Lit.model_construct(value=result, currency=None, span=value.span)  # keeps the Decimal exact


def _folded(value: ast.Value) -> ast.Value:
    return _computed(value) if isinstance(value, (ast.Plus, ast.Arith, ast.Function)) else value


def nodes(node: ast.Node) -> Iterator[ast.Node]:
    """Every node of a tree, ``node`` first."""
    yield node
    for name, part in node.__dict__.items():
        for item in part if isinstance(part, tuple) else (part,):
            if name != "span" and isinstance(item, ast.Node):
                yield from nodes(item)


def _literal(value: ast.Value) -> str:
    if not isinstance(value, ast.Lit):
        raise NotTranslatable("expected a literal")
    literal = value.value
    if isinstance(literal, bool):
        return "true" if literal else "false"
    if isinstance(literal, str):
        return _q(canonical_text(literal))  # requests reach Cedar canonical, as they reach the engine
    if isinstance(literal, (int, float, Decimal)):
        try:
            return f"decimal({_q(decimal_text(literal))})"
        except ValueError as error:
            raise NotTranslatable(str(error)) from None
    raise NotTranslatable("Cedar has no null")


def decimal_text(number: int | float | Decimal) -> str:
    """``number`` as the text of a Cedar decimal, or :class:`ValueError` if Cedar cannot hold it exactly."""
    exact = Decimal(repr(number)) if isinstance(number, float) else Decimal(number)
    if not exact.is_finite() or abs(exact) > _DECIMAL_LIMIT:
        raise ValueError(f"{number!r} is outside the range of Cedar's decimal type")
    if exact != exact.quantize(_TEN_THOUSANDTH):
        raise ValueError(f"{number!r} has more than the 4 decimal places of Cedar's decimal type")
    text = format(exact.quantize(_TEN_THOUSANDTH).normalize(), "f")
    return text if "." in text else text + ".0"


_JSON_ESCAPES = frozenset({"__extn", "__entity", "__expr"})


def cedar_value(value: Any) -> Any:
    """A canonical JSON value in Cedar's JSON form: numbers become decimals, at every depth."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, Decimal)):
        return {"__extn": {"fn": "decimal", "arg": decimal_text(value)}}
    if isinstance(value, Mapping):
        escapes = _JSON_ESCAPES.intersection(value)
        if escapes:  # Cedar's JSON would read the record as an extension value or an entity, not a record
            raise ValueError(f"Cedar's JSON reads a record with the key {sorted(escapes)[0]!r} as no record")
        return {key: cedar_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [cedar_value(item) for item in value]
    raise ValueError(f"Cedar has no value for {value!r}")


def _q(text: str) -> str:
    return f'"{_escaped(text)}"'


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def _escaped(text: str) -> str:
    """``text`` as the inside of a Cedar string literal: Cedar's escapes, ``\\u{...}`` for what is not printable
    (JSON's ``\\uXXXX`` is not Cedar, and would make the export unparseable)."""
    return "".join(_ESCAPES.get(c) or (c if c.isprintable() else f"\\u{{{ord(c):x}}}") for c in text)


def cedar_request(request: Request) -> tuple[dict[str, object], dict[str, object]]:
    """The Cedar request and principal entity for one of our requests (``ValueError`` if Cedar cannot hold it).

    ``context.types`` maps the key (:func:`type_key`) of every value a policy may read to its type, so that the
    exported policies test a value's type before using it: Cedar has no test of a value's type, and a policy whose
    evaluation errors is ignored, so a ``forbid`` reading ``"1000"`` as a number would not apply."""
    types: dict[str, str] = {}
    _types(types, ("args",), request.args)
    _types(types, ("user",), request.principal.attributes)
    types[type_key("user", ("roles",))] = "set"
    _types(types, ("agent",), request.agent.attributes)
    types[type_key("agent", ("id",))] = "string"
    context: dict[str, object] = {
        "args": cedar_value(request.args),
        "agent": {"id": request.agent.id, "attributes": cedar_value(request.agent.attributes)},
        "types": types,
        "tool": request.action,  # the forbids of tool patterns (`crm.*`) match it with `like`
    }
    for key, value in (
        ("tenant", request.context.tenant),
        ("session", request.context.session_id),
        ("resource", request.resource),
    ):
        if value is not None:
            context[key] = value
            types[type_key("context", (key,))] = "string"
    cedar: dict[str, object] = {
        "principal": entity_uid("User", request.principal.id),
        "action": entity_uid("Action", request.action),
        "resource": entity_uid("Gateway", request.resource or "default"),
        "context": context,
    }
    entity: dict[str, object] = {
        "uid": entity_uid("User", request.principal.id),
        "attrs": {"roles": sorted(request.principal.roles), "claims": cedar_value(request.principal.attributes)},
        "parents": [],
    }
    return cedar, entity


def _types(types: dict[str, str], path: tuple[str, ...], value: Any) -> None:
    """Record the type of ``value`` and of every value in its records (the items of sets have no keys)."""
    if isinstance(value, Mapping):
        types[type_key(path[0], path[1:])] = "record"
        for name, item in value.items():
            _types(types, (*path, name), item)
        return
    kind = ("bool" if isinstance(value, bool) else "string" if isinstance(value, str)
            else "set" if isinstance(value, (list, tuple)) else "decimal")  # fmt: skip
    types[type_key(path[0], path[1:])] = kind
