"""The typed policy AST: frozen pydantic nodes, each with the source span it came from.

One tree serves the checker, the compiler, the formatter and the Cedar exporter. :func:`structure` drops spans
and rule text, so two trees can be compared for meaning (``parse(fmt(x)) == parse(x)``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SCOPES = ("user", "agent", "session", "tenant")
PATH_ROOTS = ("args", "user", "agent", "context")


class Span(BaseModel):
    model_config = ConfigDict(frozen=True)
    file: str
    line: int
    column: int
    end_line: int
    end_column: int


class Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    span: Span | None = None


class Duration(Node):
    """A length of time; also a value (``14 days``) in comparisons and arithmetic."""

    kind: Literal["duration"] = "duration"
    amount: float
    unit: str  # singular: second, minute, hour, day, week

    @property
    def seconds(self) -> float:
        return self.amount * UNIT_SECONDS[self.unit]


class Targets(Node):
    """Which tools a rule or aggregate covers: every tool (``names == ()``) or names/globs."""

    names: tuple[str, ...] = ()
    any_phrase: bool = False  # written "any tool in ..." (kept so fmt preserves the wording)

    @property
    def any(self) -> bool:
        return not self.names


# ---- values -------------------------------------------------------------------------------------------------------
class Lit(Node):
    kind: Literal["literal"] = "literal"
    value: str | int | float | bool | None
    currency: str | None = None


class Path(Node):
    kind: Literal["path"] = "path"
    root: str  # one of PATH_ROOTS
    parts: tuple[str, ...] = ()


class Resolve(Node):
    """``entity(k1, k2, ...).attr``: the resolver is called with the key values (one key: the value itself)."""

    kind: Literal["resolve"] = "resolve"
    entity: str
    keys: tuple[Value, ...]
    attr: tuple[str, ...] = ()


class Length(Node):
    kind: Literal["length"] = "length"
    of: Value


class Host(Node):
    kind: Literal["host"] = "host"
    of: Value


class Plus(Node):
    kind: Literal["plus"] = "plus"
    terms: tuple[Value, ...]


class Sum(Node):
    kind: Literal["sum"] = "sum"
    arg: tuple[str, ...]
    actions: Targets
    window: Duration
    scope: str


class Count(Node):
    kind: Literal["count"] = "count"
    actions: Targets
    window: Duration
    scope: str


class Spend(Node):
    kind: Literal["spend"] = "spend"
    scope: str
    window: Duration | None = None  # None: since midnight UTC today


class Score(Node):
    kind: Literal["score"] = "score"
    detector: str
    source: Value | None = None  # None: the call's arguments as canonical JSON


class Var(Node):
    """A quantifier's variable (``item`` in ``any item in line_items has ...``), with a path into it."""

    kind: Literal["var"] = "var"
    name: str
    parts: tuple[str, ...] = ()


ArithOp = Literal["plus", "minus", "times", "divided"]


class Arith(Node):
    """Exact decimal (or date and duration) arithmetic; a chain of only ``plus`` stays a :class:`Plus`."""

    kind: Literal["arith"] = "arith"
    op: ArithOp
    left: Value
    right: Value


class Function(Node):
    """``min(a, b, ...)``, ``max(a, b, ...)``, ``abs(a)``."""

    kind: Literal["function"] = "function"
    name: Literal["min", "max", "abs"]
    args: tuple[Value, ...]


class Fold(Node):
    """``sum of payment.amount for payment in payments`` (also ``min of``, ``max of``)."""

    kind: Literal["fold"] = "fold"
    op: Literal["sum", "min", "max"]
    value: Value
    var: str
    over: Value


class CountWhere(Node):
    """``count of payment in payments where COND``."""

    kind: Literal["count_where"] = "count_where"
    var: str
    over: Value
    cond: Cond


class Now(Node):
    """The decision time (``Request.context.time``)."""

    kind: Literal["now"] = "now"


class Today(Node):
    """The date of the decision time in ``tz`` (UTC when None)."""

    kind: Literal["today"] = "today"
    tz: str | None = None


class Clock(Node):
    """A time of day literal, ``18:00``."""

    kind: Literal["clock"] = "clock"
    text: str


class Calendar(Node):
    """``weekday of X`` (a day name) or ``time of day of X`` (a :class:`Clock`), read in the time zone ``tz``."""

    kind: Literal["calendar"] = "calendar"
    part: Literal["weekday", "time_of_day"]
    of: Value
    tz: str | None = None


# Discriminated by ``kind``, so validating a node looks one member up instead of trying each in turn.
Value = Annotated[
    Union[  # noqa: UP007
        Lit, Path, Resolve, Length, Host, Plus, Sum, Count, Spend, Score,
        Var, Arith, Function, Fold, CountWhere, Now, Today, Clock, Calendar, Duration,
    ],
    Field(discriminator="kind"),
]  # fmt: skip


# ---- conditions ---------------------------------------------------------------------------------------------------
class Compare(Node):
    kind: Literal["compare"] = "compare"
    left: Value
    op: str
    right: tuple[Value, ...] = ()


class And(Node):
    kind: Literal["and"] = "and"
    items: tuple[Cond, ...]
    chained: bool = False  # written as bounds of one value (`is more than 5 and less than 9`), for fmt


class Or(Node):
    kind: Literal["or"] = "or"
    items: tuple[Cond, ...]


class Not(Node):
    kind: Literal["not"] = "not"
    item: Cond


class TimeWindow(Node):
    kind: Literal["time"] = "time"
    outside: bool
    start: str  # HH:MM
    end: str
    days: tuple[int, ...] = ()  # 0 = Monday; () = every day
    day_words: tuple[str, ...] = ()  # as written (weekdays / weekends / names), for fmt
    tz: str | None = None


class After(Node):
    kind: Literal["after"] = "after"
    actions: Targets
    scope: str = "session"
    scope_written: bool = False
    within: Duration


class Quantified(Node):
    """``any|every|no VAR in LIST has COND``: the condition tested for each item of a list."""

    kind: Literal["quantified"] = "quantified"
    quantifier: Literal["any", "every", "no"]
    var: str
    over: Value
    cond: Cond


class Named(Node):
    """A use of a named condition (``"large expense"``), defined by a :class:`Definition`."""

    kind: Literal["named"] = "named"
    name: str


class IfPresent(Node):
    """``COMPARISON if present``: false, not unevaluable, when a path it reads is absent."""

    kind: Literal["if_present"] = "if_present"
    item: Compare


Cond = Annotated[
    Union[Compare, And, Or, Not, TimeWindow, After, Quantified, Named, IfPresent],  # noqa: UP007
    Field(discriminator="kind"),
]


class Definition(Node):
    """``define "name" as COND.``"""

    name: str
    cond: Cond


class TypeExpr(Node):
    """A declared type: a scalar or resolver name, ``list of T`` (``item``) or a record ``{a: T, ...}``."""

    name: str  # string, number, boolean, date, datetime, duration, any, list, record, or a resolver's name
    item: TypeExpr | None = None
    fields: tuple[tuple[str, TypeExpr], ...] = ()


class Param(Node):
    name: str
    type: TypeExpr


class ResolverDecl(Node):
    """``resolver customer(customer_id: string) returns {...}.``: the keys and the record a resolver returns."""

    name: str
    params: tuple[Param, ...]
    returns: TypeExpr


class Clause(Node):
    """``when`` (holds), ``unless`` (must not hold) or a bare temporal clause (``outside ...``, ``after ...``)."""

    mode: Literal["when", "unless", "bare"]
    cond: Cond


class Subject(Node):
    kind: Literal["role", "user", "agent", "tenant"]
    value: str


class Redaction(Node):
    kind: Literal["email", "card", "phone", "ip", "iban", "secret", "pattern", "fields"]
    pattern: str | None = None
    name: str | None = None
    fields: tuple[str, ...] = ()


class LimitSpec(Node):
    count: int
    calls_word: str = "calls"
    window: Duration
    scope: str


RuleKind = Literal["allow", "deny", "approval", "limit", "redact", "suppress"]


class Rule(Node):
    id: str
    explicit_id: bool = False
    kind: RuleKind
    monitor: bool = False
    targets: Targets
    subjects: tuple[Subject, ...] = ()
    clauses: tuple[Clause, ...] = ()
    approver: str | None = None
    limit: LimitSpec | None = None
    redactions: tuple[Redaction, ...] = ()
    text: str = ""


class Comment(Node):
    line: int
    text: str


class PolicyFile(Node):
    path: str
    name: str | None = None
    version: int | None = None
    owner: str | None = None
    description: str | None = None
    default: Literal["allow", "deny"] | None = None
    rules: tuple[Rule, ...] = ()
    definitions: tuple[Definition, ...] = ()
    resolvers: tuple[ResolverDecl, ...] = ()
    comments: tuple[Comment, ...] = ()
    header_span: Span | None = None  # where the header and the default statement are, for fmt's layout
    default_span: Span | None = None


for _model in (
    Resolve, Length, Host, Plus, Score, Arith, Function, Fold, CountWhere, Calendar,
    Compare, And, Or, Not, Quantified, IfPresent, Definition, TypeExpr, Param, ResolverDecl,
):  # fmt: skip
    _model.model_rebuild()


_LAYOUT = frozenset({"span", "text", "comments", "path", "header_span", "default_span", "chained"})


def structure(node: BaseModel) -> Any:
    """The node as plain data without spans, rule text, comments or file path: its meaning."""
    return _strip(node.model_dump())


def _strip(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _strip(v) for k, v in data.items() if k not in _LAYOUT}
    if isinstance(data, (list, tuple)):
        return [_strip(v) for v in data]
    return data
