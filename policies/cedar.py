"""Cedar export (``agentcore policy export --cedar``), never more permissive than the bundle.

Request mapping (:func:`cedar_request`): principal ``User::"<id>"`` with attributes ``roles`` (set) and ``claims``
(record); action ``Action::"<tool>"``; resource ``Gateway::"<resource or default>"``; context ``{args, agent: {id,
attributes}, tenant?, session?, resource?}``. Every number is a Cedar ``decimal`` (the language compares numbers
by value, so ``1`` and ``1.0`` are one number), lists are sets, objects are records.

Allow rules become ``permit``, deny rules ``forbid``, approval rules ``forbid`` annotated
``@effect("needs_approval")`` (Cedar has no approval, so "not allowed" is what agrees). Fail-closed semantics
survive: each condition is translated into "definitely true" and "definitely false" expressions guarded by
``has``, so a permit needs its condition definitely true and a forbid applies unless its condition is definitely
false. ``x contains "text"`` is a text test or a set test depending on ``x``'s type, so such a rule is written
once per reading; the reading that does not fit the request errors, and Cedar ignores a policy that errors.

Language v2 constructs are translated where Cedar says the same thing: named conditions are inlined, ``if
present`` becomes a ``has`` guard that makes the comparison false instead of unevaluable, arithmetic and
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

import itertools
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
    describe,
    equality_key,
    is_number,
)
from agentcore.text import canonical_text

_DECIMAL_LIMIT = Decimal("922337203685477.5807")  # Cedar decimals: a 64-bit integer of ten-thousandths
_TEN_THOUSANDTH = Decimal("0.0001")
_MAX_READINGS = 8  # at most three `contains "text"` tests of unknown type per rule (2**3 policies)


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
    return CedarExport(policies=tuple(policies), skipped=tuple(skipped))


def entity_uid(kind: str, name: str) -> dict[str, str]:
    return {"type": kind, "id": name}


def _rule(rule: ast.Rule, tools: Sequence[str] | None, definitions: Mapping[str, ast.Definition]) -> list[CedarPolicy]:
    if rule.monitor:
        raise NotTranslatable("monitor rules are log-only; Cedar has no log-only policies (leaving it out is exact)")
    if rule.kind in ("redact", "suppress"):
        raise NotTranslatable("Cedar decides allow or deny only; without this obligation results would be revealed")
    if rule.kind == "limit":
        raise NotTranslatable("rate limits count earlier calls, state Cedar does not have")
    names = _action_names(rule.targets, tools)
    scope = "action" if names is None else (
        f"action == Action::{_q(names[0])}" if len(names) == 1 else
        "action in [" + ", ".join(f"Action::{_q(n)}" for n in names) + "]"
    )  # fmt: skip
    compares = _compares([clause.cond for clause in rule.clauses], definitions)
    ambiguous = sorted({_value(c.left)[0]: describe(c.left) for c in compares if _is_text_contains(c)}.items())
    if 2 ** len(ambiguous) > _MAX_READINGS:
        raise NotTranslatable(f"more than {_MAX_READINGS.bit_length() - 1} `contains` tests of text-or-list values")
    policies = []
    for choice in itertools.product((True, False), repeat=len(ambiguous)):
        reading = dict(zip(ambiguous, choice, strict=True))
        text = _policy(rule, scope, reading, definitions)
        policies.append(CedarPolicy(rule_id=rule.id, tools=None if names is None else tuple(names), text=text))
    return policies


def _compares(conds: list[ast.Cond], definitions: Mapping[str, ast.Definition]) -> Iterator[ast.Compare]:
    """The comparisons of conditions, through named conditions and ``if present`` (not inside quantifiers, whose
    comparisons are of items, never ``contains`` tests)."""
    pending, seen = list(conds), set()
    while pending:
        cond = pending.pop()
        if isinstance(cond, ast.Compare):
            yield cond
        elif isinstance(cond, (ast.And, ast.Or)):
            pending.extend(cond.items)
        elif isinstance(cond, (ast.Not, ast.IfPresent)):
            pending.append(cond.item)
        elif isinstance(cond, ast.Named) and cond.name in definitions and cond.name not in seen:
            seen.add(cond.name)
            pending.append(definitions[cond.name].cond)


def _is_text_contains(cond: ast.Compare) -> bool:
    operand = cond.right[0] if cond.right else None
    return cond.op in ("contains", "not_contains") and isinstance(operand, ast.Lit) and isinstance(operand.value, str)


def _policy(
    rule: ast.Rule, scope: str, reading: dict[tuple[str, str], bool], definitions: Mapping[str, ast.Definition]
) -> str:
    """One Cedar policy for the rule; ``reading`` says which ambiguous ``contains`` values are read as text.

    Its keys are (Cedar expression, the value's name in the policy)."""
    texts = frozenset(expression for (expression, _), is_text in reading.items() if is_text)
    translate = _Conditions(texts, definitions)
    annotations = [f"@id({_q(rule.id)})"]
    if reading:
        words = ", ".join(f"{name} {'is text' if is_text else 'is a set'}" for (_, name), is_text in reading.items())
        annotations.append(f"@reading({_q(words)})")
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
        body = f"forbid(principal, {scope}, resource)" + (f"\nunless {{ {unless} }}" if parts else "")
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
    """Translates conditions of one reading: ``texts`` are the values read as text where ``contains`` is ambiguous."""

    def __init__(self, texts: frozenset[str], definitions: Mapping[str, ast.Definition]) -> None:
        self._texts = texts
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
            defined, test = self._compare(cond.item)
            if defined == "true":
                return test, f"!({test})"
            return f"{defined} && ({test})", f"!({defined}) || !({test})"  # absent: false, not unevaluable
        defined, test = self._quantified(cond) if isinstance(cond, ast.Quantified) else self._compare(cond)
        if defined == "true":
            return test, f"!({test})"
        return f"{defined} && ({test})", f"{defined} && !({test})"

    def _quantified(self, cond: ast.Quantified) -> tuple[str, str]:
        """``any|every|no X in LIST has X is one of ...`` as a set test on the list (Cedar has no quantifiers)."""
        if not isinstance(cond.over, ast.Path):  # a literal is no list: ours fails closed, Cedar would error
            raise NotTranslatable("a quantifier is exported only over a list argument or attribute")
        listed, defined = _value(cond.over)
        member, literals = _membership(cond.cond, cond.var)
        values = "[" + ", ".join(_literal(v) for v in literals.values()) + "]"
        some_in, all_in = f"{listed}.containsAny({values})", f"{values}.containsAll({listed})"
        holds = {  # (quantifier, the item is in the literals) -> the set test
            ("any", True): some_in, ("every", True): all_in, ("no", True): f"!({some_in})",
            ("any", False): f"!({all_in})", ("every", False): f"!({some_in})", ("no", False): all_in,
        }  # fmt: skip
        return defined, holds[(cond.quantifier, member)]

    def _compare(self, cond: ast.Compare) -> tuple[str, str]:
        cond = cond.model_copy(update={"left": _folded(cond.left), "right": tuple(map(_folded, cond.right))})
        left, left_defined = _value(cond.left)
        if cond.op in ("missing", "present"):
            return "true", (f"!({left_defined})" if cond.op == "missing" else left_defined)
        if cond.op in ("has_role", "not_has_role"):
            test = f"principal.roles.contains({_literal(cond.right[0])})"
            return "true", test if cond.op == "has_role" else f"!({test})"
        if cond.op in ("matches", "not_matches"):
            raise NotTranslatable("Cedar has no regular expressions")
        positive = {"ne": "eq"}.get(cond.op, cond.op.removeprefix("not_"))
        if positive in ("eq", "one_of", "contains") and not all(isinstance(v, ast.Lit) for v in cond.right):
            raise NotTranslatable(
                "comparing two values is exact in Cedar only for literals (Cedar's sets are unordered, lists are not)"
            )
        rights = [_value(v) for v in cond.right]
        defined = " && ".join(d for d in [left_defined, *(d for _, d in rights)] if d != "true") or "true"
        values = [v for v, _ in rights]
        if positive == "eq":
            test = f"{left} == {values[0]}"
        elif positive in ("gt", "ge", "lt", "le"):
            method = {"gt": "greaterThan", "ge": "greaterThanOrEqual", "lt": "lessThan", "le": "lessThanOrEqual"}
            test = f"{left}.{method[positive]}({_number(cond.right[0], values[0])})"
        elif positive == "between":
            low, high = (_number(node, text) for node, text in zip(cond.right, values, strict=True))
            test = f"{left}.greaterThanOrEqual({low}) && {left}.lessThanOrEqual({high})"
        elif positive == "one_of":
            test = f"[{', '.join(values)}].contains({left})"
        elif positive == "contains" and not _is_text_contains(cond):
            test = f"{left}.contains({values[0]})"
        elif positive in ("contains", "starts_with", "ends_with"):
            literal = cond.right[0]
            if not isinstance(literal, ast.Lit) or not isinstance(literal.value, str):
                raise NotTranslatable("text tests against a non-literal cannot be written with Cedar's `like`")
            if positive == "contains" and left not in self._texts:
                test = f"{left}.contains({values[0]})"
            else:
                escaped = _escaped(canonical_text(literal.value)).replace("*", "\\*")
                pattern = {"contains": f"*{escaped}*", "starts_with": f"{escaped}*", "ends_with": f"*{escaped}"}
                test = f'{left} like "{pattern[positive]}"'
        else:
            raise NotTranslatable(f"`{cond.op}` has no Cedar equivalent")
        return defined, f"!({test})" if positive != cond.op else test


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


def _value(value: ast.Value) -> tuple[str, str]:
    """(Cedar expression, its definedness guard) for a value."""
    if isinstance(value, ast.Lit):
        return _literal(value), "true"
    if isinstance(value, (ast.Plus, ast.Arith, ast.Function)):
        return _literal(_computed(value)), "true"
    if not isinstance(value, ast.Path):
        raise NotTranslatable(f"{value.kind} values (resolvers, aggregates, dates, scores, lengths, hosts) are not "
                              "in Cedar")  # fmt: skip
    if value.root == "user" and value.parts == ("id",):
        raise NotTranslatable('compare the user with `for user "id"` to export it')
    if any(part.isdigit() for part in value.parts):
        raise NotTranslatable("list items are addressed by position, and Cedar's sets have no positions")
    base, parts = {
        "args": ("context.args", value.parts),
        "user": ("principal.claims", value.parts),
        "agent": ("context.agent", value.parts if value.parts == ("id",) else ("attributes", *value.parts)),
        "context": ("context", value.parts),
    }[value.root]
    guards, expression = [], base
    for part in parts:
        guards.append(f"{expression} has {_q(part)}")
        expression = f"{expression}[{_q(part)}]"
    if value.root == "agent" and value.parts == ("id",):
        guards = []
    return expression, " && ".join(guards) or "true"


_NO_REQUEST = Request(principal=Principal(id="cedar.export"), action="cedar.export")  # literals read nothing


def _computed(value: ast.Plus | ast.Arith | ast.Function) -> ast.Lit:
    """Arithmetic on literals, computed now: Cedar's ``decimal`` has no arithmetic, so nothing else is exported."""
    if any(isinstance(node, (ast.Path, ast.Var, ast.Resolve)) for node in _nodes(value)):
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


def _nodes(node: ast.Node) -> Iterator[ast.Node]:
    yield node
    for name, part in node.__dict__.items():
        for item in part if isinstance(part, tuple) else (part,):
            if name != "span" and isinstance(item, ast.Node):
                yield from _nodes(item)


def _literal(value: ast.Value) -> str:
    if not isinstance(value, ast.Lit):
        raise NotTranslatable("expected a literal")
    literal = value.value
    if isinstance(literal, bool):
        return "true" if literal else "false"
    if isinstance(literal, str):
        return _q(literal)
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


def cedar_value(value: Any) -> Any:
    """A canonical JSON value in Cedar's JSON form: numbers become decimals, at every depth."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, Decimal)):
        return {"__extn": {"fn": "decimal", "arg": decimal_text(value)}}
    if isinstance(value, Mapping):
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
    """The Cedar request and principal entity for one of our requests (``ValueError`` if Cedar cannot hold it)."""
    context: dict[str, object] = {
        "args": cedar_value(request.args),
        "agent": {"id": request.agent.id, "attributes": cedar_value(request.agent.attributes)},
    }
    for key, value in (
        ("tenant", request.context.tenant),
        ("session", request.context.session_id),
        ("resource", request.resource),
    ):
        if value is not None:
            context[key] = value
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
