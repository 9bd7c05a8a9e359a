"""Step two of the parser: Lark's parse tree -> typed AST nodes (``ast.py``) with spans.

Method names are the grammar's rule names and aliases. Semantic slips the grammar cannot express (a rule id used
twice, a glob where an argument path belongs, a number too long) raise :class:`LocatedError` with the location.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from typing import Any, Literal

from lark import Token, Tree
from lark.exceptions import VisitError
from lark.tree import Meta

from agentcore.policies import ast
from agentcore.policies.errors import Problem
from agentcore.text import LONE_SURROGATE

MAX_DURATION_S = 100 * 366 * 86400  # longer windows are typos, and overflow datetime arithmetic


class LocatedError(Exception):
    """A problem found while building the AST, with its location (raised inside the transformer)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _children(items: list[Any], kind: type) -> list[Any]:
    return [item for item in items if isinstance(item, kind)]


class ToAst:
    """Parse tree -> AST. Method names are the grammar's rule names and aliases; each takes (meta, children)."""

    def __init__(self, path: str, text: str) -> None:
        self._path = path
        self._lines = text.splitlines()
        self._text = text
        self._rules = 0

    def transform(self, tree: Tree[Token]) -> Any:
        """Bottom-up over the tree, like lark's ``Transformer`` but without its wrapper per call (a third of the
        time of loading a large bundle). Errors arrive wrapped in :class:`VisitError`, as from lark's."""
        children = [self.transform(c) if isinstance(c, Tree) else c for c in tree.children]
        method = getattr(self, str(tree.data), None)
        try:
            if method is None:
                return self.__default__(str(tree.data), children, tree.meta)
            return method(tree.meta, children)
        except VisitError:
            raise
        except Exception as error:
            raise VisitError(str(tree.data), tree, error) from error

    def _span(self, meta: Meta) -> ast.Span | None:
        if getattr(meta, "empty", True):
            return None
        return ast.Span(
            file=self._path, line=meta.line, column=meta.column, end_line=meta.end_line, end_column=meta.end_column
        )

    def _error(self, meta: Meta | Token, message: str, help: str = "") -> LocatedError:
        line, column = getattr(meta, "line", 0) or 0, getattr(meta, "column", 0) or 0
        source = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return LocatedError(Problem(message, self._path, line, column, source, help))

    # ---- file and header -----------------------------------------------------------------------------------------
    def start(self, meta: Meta, items: list[Any]) -> ast.PolicyFile:
        header: dict[str, Any] = next((i for i in items if isinstance(i, dict)), {})
        rules = _children(items, ast.Rule)
        defaults = [i for i in items if isinstance(i, tuple) and i[0] == "default"]
        if len(defaults) > 1:
            raise self._error(
                defaults[1][2], "the default effect is set twice", "keep one `default allow.` or `default deny.`"
            )
        seen: dict[str, ast.Rule] = {}
        for rule in rules:
            if rule.id in seen:
                raise self._error(rule.span or meta, f"rule id `{rule.id}` is used twice", "give each rule its own id")
            seen[rule.id] = rule
        return ast.PolicyFile(
            path=self._path,
            default=defaults[0][1] if defaults else None,
            default_span=self._span(defaults[0][2]) if defaults else None,
            rules=tuple(rules),
            definitions=tuple(_children(items, ast.Definition)),
            resolvers=tuple(_children(items, ast.ResolverDecl)),
            span=self._span(meta),
            **header,
        )

    def schema(self, meta: Meta, items: list[Any]) -> ast.PolicyFile:
        return ast.PolicyFile(path=self._path, resolvers=tuple(items), span=self._span(meta))

    def header(self, meta: Meta, items: list[Any]) -> dict[str, Any]:
        fields: dict[str, Any] = {"name": _string(items[0]), "header_span": self._span(meta)}
        for key, value in items[1:]:
            fields[key] = value
        return fields

    def version(self, meta: Meta, items: list[Token]) -> tuple[str, int]:
        return ("version", int(items[0]))

    def owner(self, meta: Meta, items: list[Token]) -> tuple[str, str]:
        return ("owner", _string(items[0]))

    def description(self, meta: Meta, items: list[Token]) -> tuple[str, str]:
        return ("description", _string(items[0]))

    def default_stmt(self, meta: Meta, items: list[Token]) -> tuple[str, str, Meta]:
        return ("default", str(items[0]), meta)

    # ---- named conditions and resolver declarations --------------------------------------------------------------
    def define_stmt(self, meta: Meta, items: list[Any]) -> ast.Definition:
        return ast.Definition(name=_string(items[1]), cond=items[2], span=self._span(meta))

    def resolver_decl(self, meta: Meta, items: list[Any]) -> ast.ResolverDecl:
        name = str(items[1])
        if not name.isidentifier():
            raise self._error(items[1], f"`{name}` is not a resolver name", "resolver names are single words")
        params = tuple(_children(items, ast.Param))
        return ast.ResolverDecl(name=name, params=params, returns=items[-1], span=self._span(meta))

    def param(self, meta: Meta, items: list[Any]) -> ast.Param:
        return ast.Param(name=str(items[0]), type=items[1], span=self._span(meta))

    def type_name(self, meta: Meta, items: list[Token]) -> ast.TypeExpr:
        name = str(items[0])
        if not name.isidentifier():
            raise self._error(items[0], f"`{name}` is not a type", "write string, number, boolean, date, datetime, "
                              "duration, list of T, {field: T, ...} or the name of a declared resolver")  # fmt: skip
        return ast.TypeExpr(name=name, span=self._span(meta))

    def list_type(self, meta: Meta, items: list[Any]) -> ast.TypeExpr:
        return ast.TypeExpr(name="list", item=items[0], span=self._span(meta))

    def record_type(self, meta: Meta, items: list[Any]) -> ast.TypeExpr:
        fields = tuple(items)
        names = [name for name, _ in fields]
        if len(set(names)) != len(names):
            raise self._error(meta, "a record type names a field twice", "give each field one type")
        return ast.TypeExpr(name="record", fields=fields, span=self._span(meta))

    def type_field(self, meta: Meta, items: list[Any]) -> tuple[str, ast.TypeExpr]:
        return (str(items[0]), items[1])

    # ---- rules ---------------------------------------------------------------------------------------------------
    def rule(self, meta: Meta, items: list[Any]) -> ast.Rule:
        self._rules += 1
        body: dict[str, Any] = items[-1]
        label = next((i for i in items if isinstance(i, tuple) and i[0] == "label"), None)
        monitor = any(isinstance(i, Token) and i.type == "MONITOR" for i in items)
        start, end = meta.start_pos, meta.end_pos
        return ast.Rule(
            id=label[1] if label else f"{self._path.rsplit('/', 1)[-1]}#{self._rules}",
            explicit_id=label is not None,
            monitor=monitor,
            text=" ".join(self._text[start:end].split()),
            span=self._span(meta),
            **body,
        )

    def rule_label(self, meta: Meta, items: list[Token]) -> tuple[str, str]:
        return ("label", _string(items[-1]))

    def _body(self, kind: str, items: list[Any], **extra: Any) -> dict[str, Any]:
        return {
            "kind": kind,
            "targets": next(i for i in items if isinstance(i, ast.Targets)),
            "subjects": next((i for i in items if isinstance(i, tuple) and i and isinstance(i[0], ast.Subject)), ()),
            "clauses": tuple(_children(items, ast.Clause))
            + tuple(
                ast.Clause(mode="bare", cond=c, span=c.span)
                for c in items
                if isinstance(c, (ast.TimeWindow, ast.After))
            ),
            **extra,
        }

    def allow_rule(self, meta: Meta, items: list[Any]) -> dict[str, Any]:
        return self._body("allow", items)

    def deny_rule(self, meta: Meta, items: list[Any]) -> dict[str, Any]:
        return self._body("deny", items)

    def approval_rule(self, meta: Meta, items: list[Any]) -> dict[str, Any]:
        approver = next((i[1] for i in items if isinstance(i, tuple) and i and i[0] == "approver"), None)
        return self._body("approval", items, approver=approver)

    def approver(self, meta: Meta, items: list[Token]) -> tuple[str, str]:
        return ("approver", _string(items[0]))

    def limit_rule(self, meta: Meta, items: list[Any]) -> dict[str, Any]:
        count, calls, scope = (i for i in items if isinstance(i, Token) and i.type in _LIMIT_PARTS)
        window = next(i for i in items if isinstance(i, ast.Duration))
        limit = ast.LimitSpec(
            count=int(count), calls_word=str(calls), window=window, scope=str(scope), span=self._span(meta)
        )
        return self._body("limit", items, limit=limit)

    def redact_rule(self, meta: Meta, items: list[Any]) -> dict[str, Any]:
        return self._body("redact", items, redactions=tuple(_children(items, ast.Redaction)))

    def suppress_rule(self, meta: Meta, items: list[Any]) -> dict[str, Any]:
        return self._body("suppress", items)

    # ---- targets and subjects ------------------------------------------------------------------------------------
    def any_tool(self, meta: Meta, items: list[Any]) -> ast.Targets:
        return ast.Targets(span=self._span(meta))

    def tool_list_targets(self, meta: Meta, items: list[Any]) -> ast.Targets:
        names: tuple[str, ...] = items[0]
        any_phrase = self._text[meta.start_pos : meta.start_pos + 3] == "any"
        return ast.Targets(names=names, any_phrase=any_phrase, span=self._span(meta))

    def tool_list(self, meta: Meta, items: list[Token]) -> tuple[str, ...]:
        return tuple(str(i) for i in items)

    def subject(self, meta: Meta, items: list[ast.Subject]) -> tuple[ast.Subject, ...]:
        return tuple(items)

    def subject_role(self, meta: Meta, items: list[Token]) -> ast.Subject:
        return ast.Subject(kind="role", value=_string(items[0]), span=self._span(meta))

    def subject_user(self, meta: Meta, items: list[Token]) -> ast.Subject:
        return ast.Subject(kind="user", value=_string(items[0]), span=self._span(meta))

    def subject_agent(self, meta: Meta, items: list[Token]) -> ast.Subject:
        return ast.Subject(kind="agent", value=_string(items[0]), span=self._span(meta))

    def subject_tenant(self, meta: Meta, items: list[Token]) -> ast.Subject:
        return ast.Subject(kind="tenant", value=_string(items[0]), span=self._span(meta))

    # ---- redactions ----------------------------------------------------------------------------------------------
    def redact_email(self, meta: Meta, items: list[Any]) -> ast.Redaction:
        return ast.Redaction(kind="email", span=self._span(meta))

    def redact_card(self, meta: Meta, items: list[Any]) -> ast.Redaction:
        return ast.Redaction(kind="card", span=self._span(meta))

    def redact_phone(self, meta: Meta, items: list[Any]) -> ast.Redaction:
        return ast.Redaction(kind="phone", span=self._span(meta))

    def redact_ip(self, meta: Meta, items: list[Any]) -> ast.Redaction:
        return ast.Redaction(kind="ip", span=self._span(meta))

    def redact_iban(self, meta: Meta, items: list[Any]) -> ast.Redaction:
        return ast.Redaction(kind="iban", span=self._span(meta))

    def redact_secret(self, meta: Meta, items: list[Any]) -> ast.Redaction:
        return ast.Redaction(kind="secret", span=self._span(meta))

    def redact_pattern(self, meta: Meta, items: list[Token]) -> ast.Redaction:
        name = _string(items[1]) if len(items) > 1 else None
        return ast.Redaction(kind="pattern", pattern=_string(items[0]), name=name, span=self._span(meta))

    def redact_fields(self, meta: Meta, items: list[Token]) -> ast.Redaction:
        return ast.Redaction(kind="fields", fields=tuple(_string(i) for i in items), span=self._span(meta))

    # ---- clauses and conditions ----------------------------------------------------------------------------------
    def when_clause(self, meta: Meta, items: list[Any]) -> ast.Clause:
        return ast.Clause(mode="when", cond=items[0], span=self._span(meta))

    def unless_clause(self, meta: Meta, items: list[Any]) -> ast.Clause:
        return ast.Clause(mode="unless", cond=items[0], span=self._span(meta))

    def or_(self, meta: Meta, items: list[Any]) -> Any:
        flat = tuple(part for item in items for part in (item.items if isinstance(item, ast.Or) else (item,)))
        return items[0] if len(items) == 1 else ast.Or(items=flat, span=self._span(meta))

    def and_(self, meta: Meta, items: list[Any]) -> Any:
        """``a and (b and c)`` is ``a and b and c``: one flat node, so the formatter can drop the parentheses."""
        flat = tuple(
            part
            for item in items
            for part in (item.items if isinstance(item, ast.And) and not item.chained else (item,))
        )  # a chain of bounds stays one node, so fmt writes it as written
        return items[0] if len(items) == 1 else ast.And(items=flat, span=self._span(meta))

    def not_(self, meta: Meta, items: list[Any]) -> ast.Not:
        return ast.Not(item=items[0], span=self._span(meta))

    def comparison(self, meta: Meta, items: list[Any]) -> ast.Compare:
        left, (op, right) = items
        if op in ("has_role", "not_has_role") and not (
            isinstance(left, ast.Path) and left.root == "user" and not left.parts
        ):
            raise self._error(meta, "only `user` has roles", 'write `user has role "name"`')
        operands = tuple(ast.Lit(value=_string(i)) if isinstance(i, Token) else i for i in right)
        return ast.Compare(left=left, op=op, right=operands, span=self._span(meta))

    def chained(self, meta: Meta, items: list[Any]) -> ast.And:
        """``amount is more than 5 and less than 10``: one comparison per bound, all of the same value."""
        left, predicates = items[0], [i for i in items[1:] if not isinstance(i, Token)]
        compares = tuple(self.comparison(meta, [left, p]) for p in predicates)
        return ast.And(items=compares, chained=True, span=self._span(meta))

    def if_present(self, meta: Meta, items: list[Any]) -> ast.IfPresent:
        return ast.IfPresent(item=self.comparison(meta, items), span=self._span(meta))

    def named(self, meta: Meta, items: list[Token]) -> ast.Named:
        return ast.Named(name=_string(items[0]), span=self._span(meta))

    def _quantified(self, meta: Meta, items: list[Any], quantifier: Literal["any", "every", "no"]) -> ast.Quantified:
        var, over, cond = self._variable(items[0]), items[1], items[2]
        return ast.Quantified(quantifier=quantifier, var=var, over=over, cond=bind(cond, var), span=self._span(meta))

    def any_item(self, meta: Meta, items: list[Any]) -> ast.Quantified:
        return self._quantified(meta, items, "any")

    def every_item(self, meta: Meta, items: list[Any]) -> ast.Quantified:
        return self._quantified(meta, items, "every")

    def no_item(self, meta: Meta, items: list[Any]) -> ast.Quantified:
        return self._quantified(meta, items, "no")

    def _variable(self, token: Token) -> str:
        name = str(token)
        if not name.isidentifier() or name in ast.PATH_ROOTS:
            raise self._error(
                token, f"`{name}` cannot name the items of a list", "use a single word like `item` or `payment`"
            )
        return name

    def after(self, meta: Meta, items: list[Any]) -> ast.After:
        scope = next((i for i in items if isinstance(i, str) and not isinstance(i, Token)), None)
        return ast.After(
            actions=items[0],
            scope=scope or "session",
            scope_written=scope is not None,
            within=items[-1],
            span=self._span(meta),
        )

    def same_session(self, meta: Meta, items: list[Any]) -> str:
        return "session"

    def same_scope(self, meta: Meta, items: list[Token]) -> str:
        return str(items[0])

    def _window(self, meta: Meta, items: list[Any], outside: bool) -> ast.TimeWindow:
        start, end = str(items[0]), str(items[1])
        for token in items[:2]:
            hours, minutes = str(token).split(":")
            if int(hours) > 24 or (int(hours) == 24 and minutes != "00"):
                raise self._error(token, f"`{token}` is not a time of day", "use 00:00 to 24:00")
        days: tuple[tuple[int, ...], tuple[str, ...]] = next((i for i in items if isinstance(i, tuple)), ((), ()))
        tz = next((i for i in items[2:] if isinstance(i, str) and not isinstance(i, tuple)), None)
        return ast.TimeWindow(
            outside=outside, start=start, end=end, days=days[0], day_words=days[1], tz=tz, span=self._span(meta)
        )

    def outside(self, meta: Meta, items: list[Any]) -> ast.TimeWindow:
        return self._window(meta, items, outside=True)

    def during(self, meta: Meta, items: list[Any]) -> ast.TimeWindow:
        return self._window(meta, items, outside=False)

    def day_set(self, meta: Meta, items: list[Token]) -> tuple[tuple[int, ...], tuple[str, ...]]:
        word = str(items[0])
        return ((0, 1, 2, 3, 4) if word == "weekdays" else (5, 6)), (word,)

    def day_list(self, meta: Meta, items: list[Token]) -> tuple[tuple[int, ...], tuple[str, ...]]:
        words = tuple(str(i) for i in items)
        return tuple(sorted({ast.WEEKDAYS.index(w) for w in words})), words

    def timezone(self, meta: Meta, items: list[Token]) -> str:
        return _string(items[0])

    # ---- predicates: (op, operands) ------------------------------------------------------------------------------
    def __default__(self, data: str, children: list[Any], meta: Meta) -> Any:
        if data in _PREDICATES:
            return (data, children)
        raise self._error(meta, f"internal: no transformer for `{data}`")

    # ---- values --------------------------------------------------------------------------------------------------
    def plus(self, meta: Meta, items: list[Any]) -> Any:
        left, right = items
        terms = left.terms if isinstance(left, ast.Plus) else (left,)
        return ast.Plus(terms=(*terms, right), span=self._span(meta))

    def minus(self, meta: Meta, items: list[Any]) -> ast.Arith:
        return ast.Arith(op="minus", left=items[0], right=items[1], span=self._span(meta))

    def times(self, meta: Meta, items: list[Any]) -> ast.Arith:
        return ast.Arith(op="times", left=items[0], right=items[1], span=self._span(meta))

    def divided(self, meta: Meta, items: list[Any]) -> ast.Arith:
        return ast.Arith(op="divided", left=items[0], right=items[1], span=self._span(meta))

    def now(self, meta: Meta, items: list[Any]) -> ast.Now:
        return ast.Now(span=self._span(meta))

    def today(self, meta: Meta, items: list[Any]) -> ast.Today:
        return ast.Today(tz=items[0] if items else None, span=self._span(meta))

    def weekday(self, meta: Meta, items: list[Any]) -> ast.Calendar:
        tz = items[1] if len(items) > 1 else None
        return ast.Calendar(part="weekday", of=items[0], tz=tz, span=self._span(meta))

    def time_of_day(self, meta: Meta, items: list[Any]) -> ast.Calendar:
        tz = items[1] if len(items) > 1 else None
        return ast.Calendar(part="time_of_day", of=items[0], tz=tz, span=self._span(meta))

    def _fold(self, meta: Meta, items: list[Any], op: Literal["sum", "min", "max"]) -> ast.Fold:
        value, var, over = items[0], self._variable(items[1]), items[2]
        return ast.Fold(op=op, value=bind(value, var), var=var, over=over, span=self._span(meta))

    def sum_for(self, meta: Meta, items: list[Any]) -> ast.Fold:
        return self._fold(meta, items, "sum")

    def min_for(self, meta: Meta, items: list[Any]) -> ast.Fold:
        return self._fold(meta, items, "min")

    def max_for(self, meta: Meta, items: list[Any]) -> ast.Fold:
        return self._fold(meta, items, "max")

    def count_where(self, meta: Meta, items: list[Any]) -> ast.CountWhere:
        var, over, cond = self._variable(items[0]), items[1], items[2]
        return ast.CountWhere(var=var, over=over, cond=bind(cond, var), span=self._span(meta))

    def min_fn(self, meta: Meta, items: list[Any]) -> ast.Function:
        return ast.Function(name="min", args=tuple(items), span=self._span(meta))

    def max_fn(self, meta: Meta, items: list[Any]) -> ast.Function:
        return ast.Function(name="max", args=tuple(items), span=self._span(meta))

    def abs_fn(self, meta: Meta, items: list[Any]) -> ast.Function:
        return ast.Function(name="abs", args=tuple(items), span=self._span(meta))

    def duration_value(self, meta: Meta, items: list[Token]) -> ast.Duration:
        return self.duration(meta, items)

    def clock(self, meta: Meta, items: list[Token]) -> ast.Clock:
        if int(str(items[0])[:2]) > 23:
            raise self._error(items[0], f"`{items[0]}` is not a time of day", "use 00:00 to 23:59")
        return ast.Clock(text=str(items[0]), span=self._span(meta))

    def length(self, meta: Meta, items: list[Any]) -> ast.Length:
        return ast.Length(of=items[0], span=self._span(meta))

    def host(self, meta: Meta, items: list[Any]) -> ast.Host:
        return ast.Host(of=items[0], span=self._span(meta))

    def sum_(self, meta: Meta, items: list[Any]) -> ast.Sum:
        arg, targets, window, scope = items
        path = self._path_parts(arg)
        if path.root != "args":
            raise self._error(arg, "`sum of` adds up an argument of earlier calls", "name an argument, like `amount`")
        return ast.Sum(arg=path.parts, actions=targets, window=window, scope=str(scope), span=self._span(meta))

    def count_(self, meta: Meta, items: list[Any]) -> ast.Count:
        _calls, targets, window, scope = items
        return ast.Count(actions=targets, window=window, scope=str(scope), span=self._span(meta))

    def spend(self, meta: Meta, items: list[Any]) -> ast.Spend:
        window = items[1] if isinstance(items[1], ast.Duration) else None
        return ast.Spend(scope=str(items[0]), window=window, span=self._span(meta))

    def spend_today(self, meta: Meta, items: list[Any]) -> str:
        return "today"

    def window_last(self, meta: Meta, items: list[Any]) -> ast.Duration:
        duration: ast.Duration = items[-1]
        return duration

    def window(self, meta: Meta, items: list[Any]) -> ast.Duration:
        duration: ast.Duration = items[0]
        return duration

    def duration(self, meta: Meta, items: list[Token]) -> ast.Duration:
        amount = float(items[0]) if len(items) == 2 else 1.0
        unit = str(items[-1]).rstrip("s")
        if amount <= 0:
            raise self._error(items[0], "a duration must be positive", "write e.g. `1 hour`")
        if amount * ast.UNIT_SECONDS[unit] > MAX_DURATION_S:
            raise self._error(items[0], "a duration can be at most 100 years", "write e.g. `52 weeks`")
        return ast.Duration(amount=amount, unit=unit, span=self._span(meta))

    def score(self, meta: Meta, items: list[Any]) -> ast.Score:
        source = items[1] if len(items) > 1 and items[1] != "arguments" else None
        return ast.Score(detector=_string(items[0]), source=source, span=self._span(meta))

    def score_arguments(self, meta: Meta, items: list[Any]) -> str:
        return "arguments"

    def path(self, meta: Meta, items: list[Token]) -> ast.Path:
        return self._path_parts(items[0])

    def _path_parts(self, token: Token) -> ast.Path:
        # interned, as Python interns the keys of dict literals and of model fields: a request's dict then finds
        # the name by identity, without comparing the text
        parts = [sys.intern(part) for part in str(token).split(".")]
        if "*" in str(token):
            raise self._error(token, f"`{token}` is a pattern, not an argument path", "remove the `*`")
        if parts[0] in ast.PATH_ROOTS:
            return ast.Path(root=parts[0], parts=tuple(parts[1:]), span=self._token_span(token))
        return ast.Path(root="args", parts=tuple(parts), span=self._token_span(token))

    def _token_span(self, token: Token) -> ast.Span:
        return ast.Span(
            file=self._path,
            line=token.line or 0,
            column=token.column or 0,
            end_line=token.end_line or 0,
            end_column=token.end_column or 0,
        )

    def resolve(self, meta: Meta, items: list[Any]) -> ast.Resolve:
        entity = str(items[0])
        if not entity.isidentifier():
            raise self._error(items[0], f"`{entity}` is not a resolver name", "resolver names are single words")
        attr_token = items[-1] if isinstance(items[-1], Token) and items[-1].type == "ATTR" else None
        keys = tuple(items[1:-1] if attr_token is not None else items[1:])
        attr = tuple(str(attr_token)[1:].split(".")) if attr_token is not None else ()
        return ast.Resolve(entity=entity, keys=keys, attr=attr, span=self._span(meta))

    # ---- literals ------------------------------------------------------------------------------------------------
    def string(self, meta: Meta, items: list[Token]) -> ast.Lit:
        return ast.Lit(value=_string(items[0]), span=self._span(meta))

    def number(self, meta: Meta, items: list[Token]) -> ast.Lit:
        text = str(items[0])
        if len(text) > 40:
            raise self._error(items[0], "this number is too long", "numbers have at most 40 digits")
        value: int | float = float(text) if "." in text else int(text)
        if type(value) is float and Decimal(repr(value)) != Decimal(text):  # compared as Decimal(repr(value))
            raise self._error(
                items[0],
                f"{text} has more digits than a policy number holds exactly (it would be read as {value!r})",
                "write at most 15 significant digits, or a whole number",
            )
        currency = str(items[1]) if len(items) > 1 else None
        return ast.Lit(value=value, currency=currency, span=self._span(meta))

    def true(self, meta: Meta, items: list[Any]) -> ast.Lit:
        return ast.Lit(value=True, span=self._span(meta))

    def false(self, meta: Meta, items: list[Any]) -> ast.Lit:
        return ast.Lit(value=False, span=self._span(meta))

    def null(self, meta: Meta, items: list[Any]) -> ast.Lit:
        return ast.Lit(value=None, span=self._span(meta))


_LIMIT_PARTS = ("INT", "CALLS", "SCOPE")
_PREDICATES = frozenset(
    [
        "eq",
        "ne",
        "gt",
        "ge",
        "lt",
        "le",
        "between",
        "not_between",
        "one_of",
        "not_one_of",
        "contains",
        "not_contains",
        "starts_with",
        "not_starts_with",
        "ends_with",
        "not_ends_with",
        "matches",
        "not_matches",
        "missing",
        "present",
        "before",
        "later",
        "within_before",
        "within_after",
        "within_of",
        "has_role",
        "not_has_role",
    ]
)


def bind(node: Any, var: str) -> Any:
    """``node`` with every argument path that starts with ``var`` turned into a :class:`~ast.Var`.

    Inner quantifiers are built first (the transformer works bottom-up), so an inner variable of the same name
    has already claimed its paths: the innermost binding wins.
    """
    if isinstance(node, ast.Path):
        if node.root == "args" and node.parts and node.parts[0] == var:
            return ast.Var(name=var, parts=node.parts[1:], span=node.span)
        return node
    if isinstance(node, tuple):
        return tuple(bind(item, var) for item in node)
    if isinstance(node, ast.Node):
        changes = {
            name: bind(value, var)
            for name, value in node.__dict__.items()
            if isinstance(value, (ast.Node, tuple)) and name != "span"
        }
        return node.model_copy(update=changes)
    return node


def _string(token: Token | str) -> str:
    """The value of a quoted STRING token (JSON escapes)."""
    text = str(token)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text[1:-1]
    if LONE_SURROGATE.search(str(value)):
        raise ValueError(f"the string {text} holds a lone surrogate escape, which is not text")
    return str(value)
