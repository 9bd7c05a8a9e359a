"""Exact reasoning over the simple fragment of conditions: conjunctions of comparisons with literals.

A :class:`Region` maps each dimension (an argument or principal path, or one role) to a :class:`Constraint`: a
numeric interval and/or a set of allowed and excluded values. Emptiness, containment and overlap are decided
exactly on this fragment; a condition outside it (aggregates, regexes, ``or``) has no region and the checker
makes no claim about it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from agentcore.policies import ast

Key = tuple[str, Any]  # (type tag, value), as the engine compares equality
_INF = math.inf


def value_key(value: Any) -> Key:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("num", value)  # 1 == 1.0 with equal hashes, so no float() (which overflows on huge ints)
    return ("str", value) if isinstance(value, str) else ("null", None)


@dataclass(frozen=True)
class Constraint:
    """Values a dimension may take: ``lo..hi`` when ``numeric``, within ``allowed`` if set, never ``excluded``."""

    numeric: bool = False
    lo: float = -_INF
    lo_open: bool = False
    hi: float = _INF
    hi_open: bool = False
    allowed: frozenset[Key] | None = None
    excluded: frozenset[Key] = field(default_factory=frozenset)

    def _in_range(self, key: Key) -> bool:
        if key[0] != "num":
            return not self.numeric
        value = key[1]
        above = value > self.lo or (value == self.lo and not self.lo_open)
        below = value < self.hi or (value == self.hi and not self.hi_open)
        return above and below

    def values(self) -> frozenset[Key] | None:
        """The finite set of values allowed, or None when infinitely many are."""
        if self.allowed is None:
            return None
        return frozenset(k for k in self.allowed if k not in self.excluded and self._in_range(k))

    def empty(self) -> bool:
        finite = self.values()
        if finite is not None:
            return not finite
        if not self.numeric:
            return False
        if self.lo > self.hi or (self.lo == self.hi and (self.lo_open or self.hi_open)):
            return True
        return self.lo == self.hi and ("num", self.lo) in self.excluded

    def meet(self, other: Constraint) -> Constraint:
        lo, lo_open = max((self.lo, self.lo_open), (other.lo, other.lo_open), key=lambda b: (b[0], b[1]))
        hi, hi_open = min((self.hi, not self.hi_open), (other.hi, not other.hi_open), key=lambda b: (b[0], b[1]))
        allowed = (
            self.allowed
            if other.allowed is None
            else other.allowed
            if self.allowed is None
            else self.allowed & other.allowed
        )
        return Constraint(
            self.numeric or other.numeric, lo, lo_open, hi, not hi_open, allowed, self.excluded | other.excluded
        )

    def within(self, outer: Constraint) -> bool:
        """Every value satisfying self satisfies ``outer`` (self assumed non-empty)."""
        finite = self.values()
        if finite is not None:
            return all(
                outer._in_range(k) and k not in outer.excluded and (outer.allowed is None or k in outer.allowed)
                for k in finite
            )
        if outer.allowed is not None or (outer.numeric and not self.numeric):
            return False
        if outer.numeric:
            lower = self.lo > outer.lo or (self.lo == outer.lo and (self.lo_open or not outer.lo_open))
            upper = self.hi < outer.hi or (self.hi == outer.hi and (self.hi_open or not outer.hi_open))
            if not (lower and upper):
                return False
        return all(k in self.excluded or not self._in_range(k) for k in outer.excluded)


Region = dict[tuple[str, ...], Constraint]


def meet(a: Region, b: Region) -> Region:
    merged = dict(a)
    for dim, constraint in b.items():
        merged[dim] = merged[dim].meet(constraint) if dim in merged else constraint
    return merged


def is_empty(region: Region) -> bool:
    return any(c.empty() for c in region.values())


def contains(outer: Region, inner: Region) -> bool:
    """Every request in ``inner`` is in ``outer`` (exact on the fragment)."""
    return all(dim in inner and inner[dim].within(c) for dim, c in outer.items())


def rule_region(rule: ast.Rule) -> Region | None:
    """The rule's condition as a region, or None when it uses anything outside the fragment."""
    region: Region = {}
    for subject in rule.subjects:
        if subject.kind == "role":
            region = meet(region, {("role", subject.value): Constraint(allowed=frozenset({("bool", True)}))})
        else:
            dim = {"user": ("user", "id"), "agent": ("agent", "id"), "tenant": ("context", "tenant")}[subject.kind]
            region = meet(region, {dim: Constraint(allowed=frozenset({value_key(subject.value)}))})
    for clause in rule.clauses:
        atoms = clause.cond.items if isinstance(clause.cond, ast.And) and clause.mode == "when" else (clause.cond,)
        for atom in atoms:
            part = _atom(atom, negate=clause.mode == "unless")
            if part is None:
                return None
            region = meet(region, part)
    return region


def impossible_parts(cond: ast.Cond) -> Iterator[ast.And]:
    """Every conjunction inside ``cond`` (also under ``or``, ``not`` and quantifiers) whose comparisons can never
    all hold, outermost first; the comparisons outside the fragment are left out, which only weakens the claim."""
    children: tuple[ast.Cond, ...] = ()
    if isinstance(cond, ast.And):
        region: Region = {}
        for atom in cond.items:
            part = _atom(atom, negate=False)
            region = region if part is None else meet(region, part)
        if is_empty(region):
            yield cond
            return
        children = cond.items
    elif isinstance(cond, ast.Or):
        children = cond.items
    elif isinstance(cond, (ast.Not, ast.IfPresent)):
        children = (cond.item,)
    elif isinstance(cond, ast.Quantified):
        children = (cond.cond,)
    for child in children:
        yield from impossible_parts(child)


_FLIP = {
    "eq": "ne",
    "ne": "eq",
    "gt": "le",
    "ge": "lt",
    "lt": "ge",
    "le": "gt",
    "one_of": "not_one_of",
    "not_one_of": "one_of",
    "has_role": "not_has_role",
    "not_has_role": "has_role",
}


def _atom(atom: ast.Cond, negate: bool) -> Region | None:
    if isinstance(atom, ast.Not):
        return _atom(atom.item, not negate)
    if isinstance(atom, ast.And) and not negate:  # a chain of bounds inside a larger conjunction
        region: Region = {}
        for item in atom.items:
            part = _atom(item, negate=False)
            if part is None:
                return None
            region = meet(region, part)
        return region
    if not isinstance(atom, ast.Compare) or _dimension(atom.left) is None:
        return None
    if not all(isinstance(v, ast.Lit) for v in atom.right):
        return None
    op = _FLIP.get(atom.op) if negate else atom.op
    literals = [v.value for v in atom.right if isinstance(v, ast.Lit)]
    if op in ("has_role", "not_has_role"):
        return {("role", str(literals[0])): Constraint(allowed=frozenset({("bool", op == "has_role")}))}
    dim = _dimension(atom.left)
    assert dim is not None
    constraint = _constraint(op, literals)
    if constraint is not None and dim[0] == "length of":
        constraint = constraint.meet(_LENGTHS)
    return None if constraint is None else {dim: constraint}


_LENGTHS = Constraint(numeric=True, lo=0)


def _dimension(value: ast.Value) -> tuple[str, ...] | None:
    """The dimension a value is: an argument or principal path, a quantifier's item (one item within one
    conjunction), or the length of one of these (a number that is never negative)."""
    if isinstance(value, ast.Path):
        return (value.root, *value.parts)
    if isinstance(value, ast.Var):
        return ("item", value.name, *value.parts)
    if isinstance(value, ast.Length):
        inner = _dimension(value.of)
        return None if inner is None or inner[0] == "length of" else ("length of", *inner)
    return None


def _constraint(op: str | None, literals: list[Any]) -> Constraint | None:
    if op in ("eq", "one_of"):
        return Constraint(allowed=frozenset(value_key(v) for v in literals))
    if op in ("ne", "not_one_of"):
        return Constraint(excluded=frozenset(value_key(v) for v in literals))
    numbers = [v for v in literals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) != len(literals) or not numbers:
        return None
    bound = numbers[0]
    if op == "gt":
        return Constraint(numeric=True, lo=bound, lo_open=True)
    if op == "ge":
        return Constraint(numeric=True, lo=bound)
    if op == "lt":
        return Constraint(numeric=True, hi=bound, hi_open=True)
    if op == "le":
        return Constraint(numeric=True, hi=bound)
    if op == "between":
        return Constraint(numeric=True, lo=bound, hi=numbers[1])
    return None


def schema_constraint(schema: dict[str, Any]) -> Constraint | None:
    """What a JSON Schema allows, as a constraint (enum, minimum/maximum); None if it says nothing we use."""
    constraint = Constraint()
    if isinstance(schema.get("enum"), list):
        constraint = replace(constraint, allowed=frozenset(value_key(v) for v in schema["enum"]))
    if schema.get("type") in ("number", "integer"):
        constraint = replace(constraint, numeric=True)
        for key, attr, is_open in (
            ("minimum", "lo", False),
            ("exclusiveMinimum", "lo", True),
            ("maximum", "hi", False),
            ("exclusiveMaximum", "hi", True),
        ):
            bound = schema.get(key)
            if isinstance(bound, (int, float)) and attr == "lo":
                constraint = replace(constraint, lo=bound, lo_open=is_open)
            elif isinstance(bound, (int, float)):
                constraint = replace(constraint, hi=bound, hi_open=is_open)
    return None if constraint == Constraint() else constraint
