"""Bundle-level differential test of every fast path: random rules built from the shapes that have specialised
closures (item loops, counts and sums over lists, comparisons with literals, windows around ``now``, differences
of ISO texts, two-part ``and``/``or``, inlined roles, presence and subjects, named conditions, nested
quantifiers), decided on hostile requests by the normal engine and by one compiled with every specialisation
replaced by the general closure it stands for. Effect, reasons, notes, errors and obligations must be equal, and
``decide``, a second (cached) ``decide``, ``decide_many`` and ``explain`` must give the same decision."""

from __future__ import annotations

import math
from collections import OrderedDict, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import PolicyEngine, Request
from agentcore.policies import AgentInfo, Principal, RequestContext, ast, compiler, conditions, values
from agentcore.policies.engine import NoContext
from agentcore.policies.quantities import LIMIT, arithmetic
from agentcore.policies.values import Env, Getter, compile_value, describe, listed, walk

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


# ---- the general engine: every specialisation replaced by the general closure it must decide as --------------
def _general_var(node: ast.Var) -> Getter:
    """``values._var`` without the one-field read of a plain object: the bound item (``values._var`` of the bare
    variable), then :func:`walk` through the parts."""
    item, parts, what = values._var(node.model_copy(update={"parts": ()})), node.parts, f"`{describe(node)}`"
    return (lambda env: walk(item(env), parts, what)) if parts else item


def _general_path(original: Any) -> Any:
    """``values._path`` with arguments read by :func:`walk` only (no direct read of one or two names)."""

    def path(node: ast.Path) -> Getter:
        if node.root != "args" or not node.parts:
            return original(node)
        parts, what = node.parts, describe(node)
        return lambda env: walk(env.args, parts, f"argument `{what}`")

    return path


def _general_arith(node: ast.Arith, cond: Any) -> Getter:
    """``values._arith`` as ``quantities.arithmetic`` alone (no whole-number or ISO-text shortcut, no pair)."""
    left, right, op = compile_value(node.left, cond), compile_value(node.right, cond), node.op
    what = f"`{describe(node.left)} {op} {describe(node.right)}`"
    return lambda env: arithmetic(op, left(env), right(env), what)


def _general_plus(node: ast.Plus, cond: Any) -> Getter:
    getters = [compile_value(term, cond) for term in node.terms]
    what = f"`{' plus '.join(describe(t) for t in node.terms)}`"

    def plus(env: Env) -> Any:
        total = getters[0](env)
        for get in getters[1:]:
            total = arithmetic("plus", total, get(env), what)
        return total

    return plus


def _general_items(node: ast.Value, cond: Any) -> Any:
    over, what = compile_value(node, cond), describe(node)
    return lambda env: listed(over(env), what)


def _general_ordered_const(op: str, left: Any, bound: Any, what: str, key: str | None) -> Any:
    bound = conditions.number(bound, "the bound") if type(bound) is float else bound
    return conditions._ordered_number(op, left, bound, what)


def _general_affix(left: Any, text: str, prefix: bool, negated: bool, what: str, path: Any = None) -> Any:
    test = conditions._binary("starts_with" if prefix else "ends_with", left, lambda env: text, what)
    return conditions._negate(test) if negated else test


def _true(env: Env) -> bool:
    return True


def _false(env: Env) -> bool:
    return False


@contextmanager
def general_closures() -> Iterator[None]:
    """While active, bundles compile without any fast path (the existing tests' monkeypatching, all at once)."""
    between, check, any_, all_ = conditions._between, compiler._check, conditions._any, conditions._all
    binary = conditions._binary
    with pytest.MonkeyPatch.context() as patch:
        # items.py: no item loops, item values, whole-list counts or sums
        patch.setattr(conditions, "item_tally", lambda cond, var: None)
        patch.setattr(values, "item_tally", lambda cond, var: None)
        patch.setattr(values, "item_value", lambda value, var: None)
        # values.py: no direct reads of arguments and lists, no whole-number or ISO shortcuts in arithmetic
        patch.setattr(values, "argument_key", lambda node: None)
        patch.setattr(values, "items_of", _general_items)
        patch.setitem(values._COMPILERS, ast.Var, _general_var)
        patch.setitem(values._COMPILERS, ast.Path, _general_path(values._COMPILERS[ast.Path]))
        patch.setitem(values._WITH_CONDITIONS, ast.Arith, _general_arith)
        patch.setitem(values._WITH_CONDITIONS, ast.Plus, _general_plus)
        # conditions.py: the comparison, window, text and Kleene specialisations
        patch.setattr(conditions, "argument_key", lambda node: None)
        patch.setattr(conditions, "_argument_path", lambda node: None)
        patch.setattr(conditions, "_ordered_const", _general_ordered_const)
        patch.setattr(conditions, "_within_now", lambda op, left, right, what: None)
        patch.setattr(
            conditions, "_ordered_duration", lambda op, left, bound, what: binary(op, left, lambda e: bound, what)
        )
        patch.setattr(conditions, "_eq_text", lambda left, text, path=None: binary("eq", left, lambda e: text, "x"))
        patch.setattr(conditions, "_affix", _general_affix)
        patch.setattr(conditions, "_between", lambda left, low, high, what, *_: between(left, low, high, what))
        patch.setattr(conditions, "_both", lambda first, second: all_([first, second, _true]))
        patch.setattr(conditions, "_either", lambda first, second: any_([first, second, _false]))
        # compiler.py: no lone subject inlined
        patch.setattr(compiler, "_check", lambda guard, test, lone: check(guard, test, None))
        yield


def general_engine(text: str) -> PolicyEngine:
    with general_closures():
        return PolicyEngine.from_text(text, "fuzz.policy")


SPECIALISED = (
    "_both.", "_either.", "_within_now.", "_ordered_duration.<locals>.texts_apart", "_ordered_pair.", "_ordered_list.",
    "_ordered_const.", "_eq_text.", "_affix.", "_between.<locals>.between_whole", "_arguments.", "_var.<locals>.field",
    "_path.<locals>.arg", "_path.<locals>.nested", "items_of.<locals>.argument", "_subject.<locals>",
)  # fmt: skip
SHAPES = """
deny t when a is more than 5 and s is "x".
deny t when start is within 1 hour of now or end minus start is more than 1 day.
deny t when count of item in items where item.qty is more than 1 is at least 2.
deny t for users with role "r" when any item in items has item.sku starts with "g".
deny t for user "u" when a.b is "x" and a times b is at most 7 and item.q ends with "y".
deny t when sum of item.p times item.q for item in items is more than 9 or a is between 1 and 3.
deny t when a.b is present and (user has role "r" and any x in xs has x.c is more than 1).
"""


def closures(test: Any, seen: set[int] | None = None) -> Iterator[Any]:
    """``test`` and every function it closes over, at any depth (lists of tests included)."""
    seen = set() if seen is None else seen
    if id(test) in seen:
        return
    seen.add(id(test))
    if isinstance(test, (list, tuple)):
        for part in test:
            yield from closures(part, seen)
        return
    if not callable(test) or not hasattr(test, "__code__"):
        return
    yield test
    for cell in test.__closure__ or ():
        yield from closures(cell.cell_contents, seen)


def _specialised(engine: PolicyEngine) -> set[str]:
    found = set()
    for rule in engine.bundle.rules:
        for test in closures(rule.check):
            name = test.__qualname__
            inlined = "then" in test.__code__.co_freevars  # a subject's test with the clauses written in
            if name.startswith("_subject.") and not inlined:
                continue  # the general test of a subject
            if test.__module__ == "agentcore.policies.items" or name.startswith(SPECIALISED):
                found.add(name)
    return found


def test_the_general_engine_has_no_specialised_closure() -> None:
    """The switch above reaches every specialisation: none is left in the general bundle's closures, at any
    depth, and the normal bundle has one of each kind."""
    assert _specialised(general_engine(SHAPES)) == set()
    fast = _specialised(PolicyEngine.from_text(SHAPES))
    for prefix in SPECIALISED:
        assert any(name.startswith(prefix) for name in fast), prefix
    assert any(".tally" in name for name in fast)


# ---- the grammar of rules --------------------------------------------------------------------------------------
ORDERED = st.sampled_from(["is more than", "is at least", "is less than", "is at most", ">", "<="])
NUMBER = st.sampled_from(["5", "0", "-3", "2.5", "0.1", "49.5", "1000000000000000000000000000000000000000"])
TEXT = st.sampled_from(['"a"', '"x"', '"gift_"', '"_x"', '""', '"2026-01-05"', '"ok"', '"ａ"', '"2.5"'])
SCALAR = st.sampled_from(["a", "b", "s", "customer.level", "customer.status", "start", "customer.tags.0"])
FIELD = st.sampled_from(["item.qty", "item.price", "item.sku", "item.receipt", "item"])
DURATION = st.sampled_from(["48 hours", "2 hours", "1 second", "30 days", "1 day", "90 minutes"])


def _item_atom(var: str) -> st.SearchStrategy[str]:
    field = FIELD.map(lambda f: f.replace("item", var, 1))
    return st.one_of(
        st.builds(lambda f, o, n: f"{f} {o} {n}", field, ORDERED, NUMBER),
        st.builds(lambda f, t: f"{f} is {t}", field, TEXT),
        st.builds(lambda f, t: f"{f} is not {t}", field, st.sampled_from(['"a"', "3", "7"])),
        st.builds(lambda f: f'{f} is one of "a", "b", 7', field),
        st.builds(lambda f: f'{f} is not one of 4, "x"', field),
        st.builds(
            lambda f, w, t: f"{f} {w} {t}",
            field,
            st.sampled_from(["starts with", "ends with", "does not start with", "does not end with"]),
            TEXT,
        ),
        st.builds(lambda f, w: f"{f} is {w}", field, st.sampled_from(["missing", "present"])),
        st.builds(lambda f, g, o, n: f"{f} times {g} {o} {n}", field, field, ORDERED, NUMBER),
        st.builds(lambda f, o, n: f"{f} minus 2 plus {var}.qty {o} {n}", field, ORDERED, NUMBER),
        st.builds(lambda f: f"{f} is between 1 and 5", field),
        st.just(f'any t in {var}.tags has t is "x"'),
        st.just(f'count of t in {var}.tags where t is one of "a", "b" is at least 1'),
        st.just(f"any n in numbers has n is more than {var}.qty"),
    )


def _item_cond(var: str) -> st.SearchStrategy[str]:
    return st.recursive(
        _item_atom(var),
        lambda inner: st.one_of(
            st.builds(lambda a, b: f"({a} and {b})", inner, inner),
            st.builds(lambda a, b: f"({a} or {b})", inner, inner),
            st.builds(lambda a: f"not ({a})", inner),
            st.builds(lambda a, b, c: f"({a} and {b} and {c})", inner, inner, inner),
            st.builds(lambda a, b, c: f"({a} or {b} or {c})", inner, inner, inner),
        ),
        max_leaves=3,
    )


QUANTIFIED = st.builds(lambda q, c: f"{q} item in items has {c}", st.sampled_from(["any", "every", "no"]),
                       _item_cond("item"))  # fmt: skip
FOLDS = st.one_of(
    st.builds(lambda c, o, n: f"count of item in items where {c} {o} {n}", _item_cond("item"), ORDERED, NUMBER),
    st.builds(
        lambda v, o, n: f"sum of {v} for item in items {o} {n}",
        st.sampled_from(
            ["item.price times item.qty", "item.qty", "item.price minus 2 plus item.qty", "item", "item.qty times 3"]
        ),
        ORDERED,
        NUMBER,
    ),
    st.builds(
        lambda f, v, o, n: f"{f} of {v} for item in items {o} {n}",
        st.sampled_from(["min", "max"]),
        st.sampled_from(["item.price", "item.qty", "item"]),
        ORDERED,
        NUMBER,
    ),
    st.builds(lambda o, n: f"length of items {o} {n}", ORDERED, st.sampled_from(["2", "0"])),
)
ATOM = st.one_of(
    st.builds(lambda x, o, n: f"{x} {o} {n}", SCALAR, ORDERED, NUMBER),
    st.builds(lambda w, o, n: f"a {w} b {o} {n}", st.sampled_from(["plus", "minus", "times"]), ORDERED, NUMBER),
    st.builds(lambda x, t: f"{x} is {t}", st.one_of(SCALAR, st.sampled_from(["today", "now", "end"])), TEXT),
    st.builds(lambda x, t: f"{x} is not {t}", st.one_of(SCALAR, st.sampled_from(["today", "now"])), TEXT),
    st.builds(
        lambda x, w, t: f"{x} {w} {t}",
        SCALAR,
        st.sampled_from(["starts with", "ends with", "does not start with", "does not end with"]),
        TEXT,
    ),
    st.builds(lambda x: f"{x} is between 1 and 5", SCALAR),
    st.builds(lambda x: f"{x} is not between 0 and 2.5", SCALAR),
    st.builds(lambda x, w: f"{x} is {w}", SCALAR, st.sampled_from(["missing", "present"])),
    st.builds(lambda x: f'{x} is one of "a", "b", 3', SCALAR),
    st.builds(lambda r: f'user {r} "r"', st.sampled_from(["has role", "does not have role"])),
    st.builds(
        lambda x, d, w: f"{x} is within {d} {w} now",
        st.sampled_from(["start", "end", "customer.when"]),
        DURATION,
        st.sampled_from(["before", "after", "of"]),
    ),
    st.builds(lambda o, d: f"end minus start {o} {d}", ORDERED, DURATION),
    st.builds(lambda o, d: f"end plus start {o} {d}", ORDERED, DURATION),
    st.sampled_from(["start is after end", "start is before today", "end minus start is more than a"]),
    QUANTIFIED,
    FOLDS,
    st.builds(
        lambda f, o, n: f"rec(s).{f} {o} {n}", st.sampled_from(["level", "when", "items.0.qty"]), ORDERED, NUMBER
    ),
    st.builds(lambda f, t: f"rec(s).{f} is {t}", st.sampled_from(["status", "when", "level"]), TEXT),
    st.builds(
        lambda f, w, t: f"rec(s).{f} {w} {t}",
        st.sampled_from(["status", "when"]),
        st.sampled_from(["starts with", "does not end with"]),
        TEXT,
    ),
    st.builds(lambda d: f"rec(s).when is within {d} of now", DURATION),
    st.builds(
        lambda q, c: f"{q} item in rec(s).items has {c}", st.sampled_from(["any", "every", "no"]), _item_cond("item")
    ),
    st.builds(lambda c, o, n: f"count of item in rec(s).items where {c} {o} {n}", _item_cond("item"), ORDERED, NUMBER),
    st.builds(lambda o, n: f"sum of item.price times item.qty for item in rec(s).items {o} {n}", ORDERED, NUMBER),
    st.builds(lambda x, t: f"{x} contains {t}", st.sampled_from(["s", "items", "customer.tags"]), TEXT),
    st.builds(lambda x, n, m: f"{x} is more than {n} and less than {m}", SCALAR, NUMBER, NUMBER),
)
NAMES = ('"n1"', '"n2"')


def _cond(named: bool) -> st.SearchStrategy[str]:
    leaf = st.one_of(ATOM, st.sampled_from(NAMES)) if named else ATOM
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(lambda a, b: f"({a} and {b})", inner, inner),
            st.builds(lambda a, b: f"({a} or {b})", inner, inner),
            st.builds(lambda a: f"not ({a})", inner),
            st.builds(lambda x, o, n: f"{x} {o} {n} if present", SCALAR, ORDERED, NUMBER),
            st.builds(lambda x, t: f"{x} is {t} if present", SCALAR, TEXT),
        ),
        max_leaves=3,
    )


SUBJECT = st.sampled_from(["", ' for users with role "r"', ' for user "alice"', ' for agent "bot1"',
                           ' for tenant "acme"', ' for users with role "r" and user "alice"'])  # fmt: skip
KIND = st.sampled_from(["deny t", "allow t", 'require approval from role "boss" for t', "monitor deny t",
                        'redact fields "secret" in results of t', "monitor allow t", "suppress output of t",
                        "limit t to 3 calls per hour per user"])  # fmt: skip


@st.composite
def bundles(draw: st.DrawFn) -> str:
    lines = [draw(st.sampled_from(["default allow.", "default deny."]))]
    for name in NAMES:
        lines.append(f"define {name} as {draw(_cond(False))}.")
    for _ in range(draw(st.integers(1, 4))):
        clauses = f" when {draw(_cond(True))}"
        if draw(st.booleans()):
            clauses += f" {draw(st.sampled_from(['unless', 'when']))} {draw(_cond(True))}"
        lines.append(f"{draw(KIND)}{draw(SUBJECT)}{clauses}.")
    return "\n".join(lines) + "\n"


# ---- hostile requests ------------------------------------------------------------------------------------------
MOMENT_TEXTS = st.one_of(
    st.sampled_from(
        [
            "2026-01-05",
            "2026-01-07",
            "2025-12-01",
            "2026-02-30",
            "2026-13-01",
            "2026-01-5X",
            "2026",
            "2026-01-05T12:00:00Z",
            "2026-01-05T11:00:00",
            "2026-01-05T13:00:00+01:00",
            "2026-01-07T12:00:00.000001+00:00",
            "2026-01-03T12:00:00-00:30",
            "20260105",
            "20260105T120000Z",
            "2026-W02-1",
            "2026-01-05 12:00Z",
            "2026-01-0５",
            "0001-01-01T00:00:00+01:00",
            "9999-12-31T23:59:59-01:00",
            "2026-01-05T24:00:00Z",
            "2026-01-05T12",
        ]
    ),
    st.datetimes(datetime(2025, 12, 1), datetime(2026, 2, 1)).map(lambda d: d.isoformat()),
    st.datetimes(datetime(2025, 12, 25), datetime(2026, 1, 15), timezones=st.just(UTC)).map(lambda d: d.isoformat()),
    st.dates(date(2025, 12, 1), date(2026, 2, 1)).map(lambda d: d.isoformat()),
)
SCALARS = st.one_of(
    st.integers(-10, 60),
    st.sampled_from([LIMIT - 1, LIMIT, -LIMIT, 10**70, 2.5, 3.0, -0.0, 0.1, 49.5, 1e300]),
    st.sampled_from([math.nan, math.inf, -math.inf, True, False, None]),
    st.sampled_from(["a", "b", "x", "gift_card", "c_x", "", "ok", "2.5", "5", "ａ", "a\u200b", "\u0430", "x_x"]),
    MOMENT_TEXTS,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["qty", "price", "sku", "receipt", "tags", "level", "status"]), inner, max_size=4
        ),
    ),
    max_leaves=6,
)
PLAIN_ITEM = st.fixed_dictionaries(
    {"qty": st.integers(0, 8), "price": st.sampled_from([0, 2, 7, 49, 50, 51, 100]),
     "sku": st.sampled_from(["a", "b", "gift_card", "c_x", "cx", "d", 7])},
    optional={"receipt": st.sampled_from(["r1", None]), "tags": st.lists(st.sampled_from(["a", "x", 1]), max_size=3)},
)  # fmt: skip
ITEMS = st.one_of(st.lists(PLAIN_ITEM, max_size=5), st.lists(st.one_of(PLAIN_ITEM, VALUES), max_size=5), VALUES)
CUSTOMER = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={"level": SCALARS, "status": SCALARS, "tags": st.lists(SCALARS, max_size=2), "when": MOMENT_TEXTS},
    ),
    VALUES,
)
ARGS = st.fixed_dictionaries(
    {},
    optional={
        "a": SCALARS, "b": SCALARS, "s": SCALARS, "start": st.one_of(MOMENT_TEXTS, SCALARS), "end": MOMENT_TEXTS,
        "items": ITEMS, "numbers": st.one_of(st.lists(st.integers(0, 12), max_size=4), VALUES), "customer": CUSTOMER,
    },
)  # fmt: skip


def _odd(value: Any, kind: str) -> Any:
    """A value as a Python caller or a resolver may hand it over, past the request's canonical JSON: dict
    subclasses, decimals, tuples, dates and timestamps as objects."""
    if isinstance(value, dict):
        inner = {key: _odd(item, kind) for key, item in value.items()}
        if kind == "defaultdict":
            return defaultdict(lambda: 1, inner)
        return OrderedDict(inner) if kind == "ordered" else inner
    if isinstance(value, list):
        items = [_odd(item, kind) for item in value]
        return tuple(items) if kind == "tuple" else items
    if kind == "decimal" and type(value) is float:
        return Decimal(repr(value))
    if kind == "moment" and isinstance(value, str):
        try:
            return datetime.fromisoformat(value) if len(value) > 10 else date.fromisoformat(value)
        except ValueError:
            return value
    return value


@st.composite
def requests(draw: st.DrawFn) -> Request:
    offset = draw(st.sampled_from([0, 5, -8]))
    context = RequestContext(
        time=NOW.astimezone(timezone(timedelta(hours=offset))), tenant=draw(st.sampled_from(["acme", "other", None]))
    )
    principal = Principal(id=draw(st.sampled_from(["alice", "bob"])), roles=draw(st.frozensets(st.sampled_from("rx"))))
    args, agent = draw(ARGS), AgentInfo(id=draw(st.sampled_from(["bot1", "bot2"])))
    kind = draw(st.sampled_from(["json", "json", "json", "defaultdict", "ordered", "decimal", "moment", "tuple"]))
    if kind == "json":
        return Request(principal=principal, agent=agent, action="t", args=args, context=context)
    odd = {key: _odd(value, kind) for key, value in args.items()}  # past validation, as a Python caller can
    return Request.model_construct(principal=principal, agent=agent, action="t", args=odd, context=context)


class Records(NoContext):
    """No history or detectors; the resolver ``rec`` returns one record (odd values included), or None."""

    def __init__(self, record: Any) -> None:
        self.record = record

    def resolve(self, entity: str, key: Any) -> Any:
        if self.record == "fails":
            raise LookupError("the records are down")
        return self.record


MOMENT_OBJECTS = st.one_of(
    st.dates(date(2026, 1, 3), date(2026, 1, 7)),
    st.datetimes(
        datetime(2026, 1, 4), datetime(2026, 1, 6), timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))])
    ),
    st.datetimes(datetime(2026, 1, 4), datetime(2026, 1, 6)),  # naive
)
RECORD_VALUES = st.one_of(SCALARS, MOMENT_OBJECTS, st.sampled_from([Decimal("2.5"), Decimal("NaN"), Decimal(7)]))
RECORDS = st.one_of(
    st.sampled_from([None, "fails"]),
    st.builds(
        lambda fields, items, kind: _odd({**fields, "items": items}, kind),
        st.fixed_dictionaries({}, optional={"level": RECORD_VALUES, "status": RECORD_VALUES, "when": RECORD_VALUES}),
        st.one_of(ITEMS, st.lists(st.fixed_dictionaries({"qty": RECORD_VALUES, "price": RECORD_VALUES}), max_size=3)),
        st.sampled_from(["json", "defaultdict", "ordered", "tuple", "decimal"]),
    ),
)


def _dump(engine: PolicyEngine, request: Request, context: Records) -> Any:
    return engine.decide(request, context).model_dump()


@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=bundles(), batch=st.lists(requests(), min_size=1, max_size=6), record=RECORDS)
def test_fast_paths_decide_as_the_general_closures(text: str, batch: list[Request], record: Any) -> None:
    fast, general, context = PolicyEngine.from_text(text, "fuzz.policy"), general_engine(text), Records(record)
    expected = [_dump(general, request, context) for request in batch]
    assert [_dump(fast, request, context) for request in batch] == expected, text
    assert [_dump(fast, request, context) for request in batch] == expected, text  # again, from the caches
    assert [d.model_dump() for d in fast.decide_many(batch, context)] == expected, text
    assert [fast.explain(request, context)[0].model_dump() for request in batch] == expected, text
