"""Type checking of values against resolver declarations and tool schemas (part of ``policy check``).

``resolver customer(customer_id: string) returns {tier: string, orders: list of order}.`` says what a lookup
takes and returns. With declarations the checker catches misspelt lookups and attributes, a wrong number of
keys, text in arithmetic and comparisons across kinds (a date with a number); a bundle that looks facts up
without any declaration gets one warning per resolver that its facts are unchecked. Types are inferred where
known and ``None`` (unknown) elsewhere: the checker never reports what it cannot see.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from agentcore.policies import ast
from agentcore.policies.schemas import ToolSchema

SCALARS = frozenset({"string", "number", "boolean", "date", "datetime", "duration", "time", "any"})
_ORDERED_OPS = frozenset({"gt", "ge", "lt", "le", "between", "not_between"})
_TIME_OPS = frozenset({"before", "later", "within_before", "within_after", "within_of"})
_DOMAIN = {"date": "date", "datetime": "date", "number": "number", "duration": "duration", "time": "time"}
_TYPE_OF_FORMAT = {"date": "date", "date-time": "datetime", "time": "time", "duration": "duration"}


@dataclass(frozen=True)
class FactProblem:
    severity: str  # "error" or "warning"
    code: str
    message: str
    help: str
    span: ast.Span | None


def _t(name: str, item: ast.TypeExpr | None = None) -> ast.TypeExpr:
    return ast.TypeExpr(name=name, item=item)


def declarations(files: Sequence[ast.PolicyFile]) -> dict[str, ast.ResolverDecl]:
    return {decl.name: decl for file in files for decl in file.resolvers}


def fact_problems(
    files: Sequence[ast.PolicyFile], tools: dict[str, ToolSchema] | None
) -> Iterator[tuple[ast.Rule | None, FactProblem]]:
    """Problems per rule (``None``: a problem of a declaration itself)."""
    decls = declarations(files)
    first: dict[str, ast.ResolverDecl] = {}
    for decl in (decl for file in files for decl in file.resolvers):
        earlier = first.setdefault(decl.name, decl)
        if earlier is not decl:
            where = f"{earlier.span.file}:{earlier.span.line}" if earlier.span else "earlier"
            yield None, FactProblem("error", "duplicate-resolver", f"resolver `{decl.name}` is declared twice "
                                    f"(first at {where})", "declare each resolver once, in the bundle or its "
                                    "schema file", decl.span)  # fmt: skip
    for decl in decls.values():
        for type_expr in (*(p.type for p in decl.params), decl.returns):
            for problem in _type_names(type_expr, decls):
                yield None, problem
    unchecked: set[str] = set()
    for file in files:
        for rule in file.rules:
            checker = _Types(decls, _covered_tool(rule, tools))
            for clause in rule.clauses:
                checker.cond(clause.cond, {})
            for problem in checker.problems:
                if problem.code == "unchecked-facts":
                    entity = problem.message.split("`")[1]
                    if entity in unchecked:
                        continue
                    unchecked.add(entity)
                yield rule, problem


def _covered_tool(rule: ast.Rule, tools: dict[str, ToolSchema] | None) -> ToolSchema | None:
    """The schema of the one tool a rule names (argument types are only known for a single tool)."""
    if tools is None or len(rule.targets.names) != 1:
        return None
    return tools.get(rule.targets.names[0])


def _type_names(expr: ast.TypeExpr, decls: dict[str, ast.ResolverDecl]) -> Iterator[FactProblem]:
    if expr.item is not None:
        yield from _type_names(expr.item, decls)
    for _, item in expr.fields:
        yield from _type_names(item, decls)
    if expr.name not in SCALARS and expr.name not in ("list", "record") and expr.name not in decls:
        close = difflib.get_close_matches(expr.name, [*SCALARS, *decls], n=1, cutoff=0.6)
        yield FactProblem("error", "unknown-type", f"`{expr.name}` is not a type", _hint(close, expr.name), expr.span)


def _hint(close: list[str], word: str) -> str:
    if close:
        return f"did you mean `{close[0]}`?"
    return "types: string, number, boolean, date, datetime, duration, time, list of T, {a: T}, or a resolver name"


@dataclass
class _Types:
    decls: dict[str, ast.ResolverDecl]
    tool: ToolSchema | None
    problems: list[FactProblem] = field(default_factory=list)

    def _error(self, code: str, message: str, help: str, span: ast.Span | None) -> None:
        self.problems.append(FactProblem("error", code, message, help, span))

    # ---- conditions --------------------------------------------------------------------------------------------
    def cond(self, cond: ast.Cond, scope: dict[str, ast.TypeExpr | None]) -> None:
        if isinstance(cond, (ast.And, ast.Or)):
            for item in cond.items:
                self.cond(item, scope)
        elif isinstance(cond, (ast.Not, ast.IfPresent)):
            self.cond(cond.item, scope)
        elif isinstance(cond, ast.Quantified):
            self.cond(cond.cond, {**scope, cond.var: self._item_type(cond.over, scope)})
        elif isinstance(cond, ast.Compare):
            self._compare(cond, scope)

    def _compare(self, compare: ast.Compare, scope: dict[str, ast.TypeExpr | None]) -> None:
        left = self.value(compare.left, scope)
        rights = [self.value(v, scope) for v in compare.right]
        if compare.op not in _ORDERED_OPS | _TIME_OPS or left is None:
            return
        domain = _DOMAIN.get(left.name) if left.name != "string" else "text"
        if compare.op in _TIME_OPS and domain not in (None, "date", "time"):
            self._error("type-mismatch", f"`{compare.op.replace('later', 'after')}` compares dates and times, but "
                        f"this value is {_a(left.name)}", "compare a date or a timestamp", compare.span)  # fmt: skip
            return
        within = compare.op.startswith("within")
        if within and rights[0] is not None and rights[0].name != "duration":
            self._error("type-mismatch", f"`is within` takes a duration, not {_a(rights[0].name)}",
                        "write e.g. `is within 24 hours before now`", compare.right[0].span)  # fmt: skip
        for right, node in zip(rights[1:] if within else rights, compare.right[1:] if within else compare.right,
                               strict=True):  # fmt: skip
            other = _DOMAIN.get(right.name) if right is not None and right.name != "string" else None
            if domain is not None and other is not None and domain != other:
                self._error("type-mismatch", f"compares {_a(left.name)} with {_a(right.name) if right else ''}",
                            "compare values of one kind (a date with a date, a number with a number)",
                            node.span or compare.span)  # fmt: skip

    # ---- values ------------------------------------------------------------------------------------------------
    def value(self, value: ast.Value, scope: dict[str, ast.TypeExpr | None]) -> ast.TypeExpr | None:
        """The value's type (None when unknown), recording the problems found on the way."""
        if isinstance(value, ast.Lit):
            kind = value.value
            if isinstance(kind, bool):
                return _t("boolean")
            return _t("string") if isinstance(kind, str) else _t("number") if kind is not None else None
        if isinstance(value, (ast.Now, ast.Today, ast.Clock, ast.Duration)):
            return _t({"now": "datetime", "today": "date", "clock": "time", "duration": "duration"}[value.kind])
        if isinstance(value, ast.Path):
            return self._argument(value)
        if isinstance(value, ast.Var):
            return self._walk(scope.get(value.name), value.parts, value.span, value.name)
        if isinstance(value, ast.Resolve):
            return self._resolve(value, scope)
        if isinstance(value, (ast.Plus, ast.Arith)):
            return self._arith(value, scope)
        if isinstance(value, ast.Fold):
            inner = self.value(value.value, {**scope, value.var: self._item_type(value.over, scope)})
            return inner if inner is not None and inner.name in ("number", "duration") else _t("number")
        if isinstance(value, ast.CountWhere):
            self.cond(value.cond, {**scope, value.var: self._item_type(value.over, scope)})
            return _t("number")
        if isinstance(value, ast.Calendar):
            self.value(value.of, scope)
            return _t("string" if value.part == "weekday" else "time")
        if isinstance(value, ast.Function):
            for arg in value.args:
                self.value(arg, scope)
            return None
        if isinstance(value, (ast.Length, ast.Host)):
            self.value(value.of, scope)
            return _t("number" if isinstance(value, ast.Length) else "string")
        if isinstance(value, ast.Score) and value.source is not None:
            self.value(value.source, scope)
        return _t("number")  # sums, counts, spend and scores are numbers

    def _item_type(self, over: ast.Value, scope: dict[str, ast.TypeExpr | None]) -> ast.TypeExpr | None:
        kind = self.value(over, scope)
        return kind.item if kind is not None and kind.name == "list" else None

    def _argument(self, path: ast.Path) -> ast.TypeExpr | None:
        if path.root != "args" or self.tool is None:
            return None
        schema = self.tool.at(path.parts)
        return _schema_type(schema) if schema is not None else None

    def _resolve(self, node: ast.Resolve, scope: dict[str, ast.TypeExpr | None]) -> ast.TypeExpr | None:
        for key in node.keys:
            self.value(key, scope)
        decl = self.decls.get(node.entity)
        if decl is None:
            if not self.decls:
                self.problems.append(FactProblem("warning", "unchecked-facts", f"resolver `{node.entity}` is not "
                    "declared, so its attributes and types are unchecked", f"declare it: `resolver {node.entity}"
                    "(id: string) returns {status: string}.`", node.span))  # fmt: skip
            else:
                close = difflib.get_close_matches(node.entity, list(self.decls), n=1, cutoff=0.6)
                self._error("unknown-resolver", f"no resolver `{node.entity}` is declared",
                            f"did you mean `{close[0]}`?" if close else "declare it with `resolver ...`",
                            node.span)  # fmt: skip
            return None
        if len(node.keys) != len(decl.params):
            names = ", ".join(p.name for p in decl.params)
            self._error("resolver-keys", f"`{node.entity}` takes {len(decl.params)} key(s) ({names}), "
                        f"not {len(node.keys)}", f"write `{node.entity}({names})`", node.span)  # fmt: skip
        return self._walk(decl.returns, node.attr, node.span, node.entity)

    def _walk(
        self, kind: ast.TypeExpr | None, parts: tuple[str, ...], span: ast.Span | None, what: str
    ) -> ast.TypeExpr | None:
        for part in parts:
            if kind is None or kind.name == "any":
                return None
            if kind.name in self.decls:
                kind = self.decls[kind.name].returns
            if kind.name == "list" and part.isdigit():
                kind = kind.item
                continue
            fields = dict(kind.fields)
            if kind.name != "record" or part not in fields:
                close = difflib.get_close_matches(part, list(fields), n=1, cutoff=0.6)
                self._error("unknown-attribute", f"`{what}` has no attribute `{part}`",
                            f"did you mean `{close[0]}`?" if close else
                            f"its attributes: {', '.join(fields) or 'none (it is ' + _a(kind.name) + ')'}",
                            span)  # fmt: skip
                return None
            kind, what = fields[part], f"{what}.{part}"
        if kind is not None and kind.name in self.decls:
            return self.decls[kind.name].returns
        return kind

    def _arith(self, node: ast.Plus | ast.Arith, scope: dict[str, ast.TypeExpr | None]) -> ast.TypeExpr | None:
        operands = node.terms if isinstance(node, ast.Plus) else (node.left, node.right)
        kinds = [self.value(operand, scope) for operand in operands]
        for kind, operand in zip(kinds, operands, strict=True):
            if kind is not None and kind.name in ("string", "boolean", "list", "record"):
                self._error("type-mismatch", f"arithmetic on {_a(kind.name)}",
                            "arithmetic takes numbers, dates and durations", operand.span or node.span)  # fmt: skip
                return None
        if any(kind is None for kind in kinds):
            return None
        names = {kind.name for kind in kinds if kind is not None}
        if names == {"number"}:
            return _t("number")
        op = node.op if isinstance(node, ast.Arith) else "plus"
        if op == "minus" and names <= {"date", "datetime"}:
            return _t("duration")
        if names <= {"duration"}:
            return _t("duration")
        if "number" in names:
            self._error("type-mismatch", "arithmetic mixes a number with a date or a duration",
                        "add durations to dates: `start_date plus 3 days`", node.span)  # fmt: skip
            return None
        return _t("datetime" if "datetime" in names else "date")


def _schema_type(schema: dict[str, object]) -> ast.TypeExpr | None:
    kind = schema.get("type")
    if kind == "string":
        return _t(_TYPE_OF_FORMAT.get(str(schema.get("format")), "string"))
    if kind in ("number", "integer"):
        return _t("number")
    if kind == "boolean":
        return _t("boolean")
    if kind == "array":
        items = schema.get("items")
        return _t("list", _schema_type(items) if isinstance(items, dict) else None)
    return None


def _a(kind: str) -> str:
    kind = {"datetime": "timestamp", "record": "record"}.get(kind, kind)
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
