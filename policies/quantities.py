"""Exact numbers, dates and durations for policy values: decimal arithmetic and the ordering of values.

Money must add up (``0.1 plus 0.2 is 0.3``), so every number in arithmetic or an ordered comparison is a
:class:`~decimal.Decimal` (a JSON float becomes the decimal it was written as). Text is read as a date or a
timestamp (ISO 8601) where the operation needs one; a timestamp without a zone is UTC. Anything that cannot be
computed (division by zero, overflow, text that is not a number or a date) raises :class:`Unevaluable`.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, time, timedelta
from decimal import Context, Decimal, DivisionByZero, InvalidOperation, Overflow
from typing import Any


class Unevaluable(Exception):
    """A condition could not be evaluated (missing attribute, wrong type, resolver or detector failure)."""


class Missing(Unevaluable):
    """An argument or attribute path is absent."""


# 34 significant digits (IEEE decimal128); results beyond 10**60 are an overflow, not a silent rounding.
_CONTEXT = Context(prec=34, Emax=60, Emin=-60, traps=[InvalidOperation, DivisionByZero, Overflow])
LIMIT = 10**60  # the same bound for whole numbers, which skip the decimal context
_WHOLE = frozenset({int})
_IS_DATE = re.compile(r"\d{4}-\d{2}-\d{2}").fullmatch
MIDNIGHT = time(0)
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def show(value: Any) -> str:
    """A value as it appears in an error message (JSON, cut at 60 characters)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def exact(value: Any, what: str) -> int | Decimal:
    """``value`` as an exact finite number (ints stay ints), or raise :class:`Unevaluable`."""
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is float or kind is Decimal:
        number = Decimal(repr(value)) if kind is float else value
        if not number.is_finite():
            raise Unevaluable(f"{what} is {value}, not a finite number")
        return number
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    raise Unevaluable(f"{what} is {show(value)}, not a number")


def moment(value: Any, what: str) -> date | datetime:
    """``value`` as a date or an aware timestamp; ISO text is parsed (no zone means UTC)."""
    if isinstance(value, str):  # the commonest: text from JSON arguments (text is never a date, so test it first)
        try:
            if len(value) == 10 and value[4] == "-" == value[7]:  # the shape of every text _IS_DATE matches
                try:  # of its ten-character forms only YYYY-MM-DD has these dashes, and it reads ASCII digits
                    return date.fromisoformat(value)  # only: a text it reads is one _IS_DATE matches
                except ValueError:
                    if _IS_DATE(value):  # a date that does not exist, not a timestamp
                        raise
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    elif isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    elif isinstance(value, date):
        return value
    raise Unevaluable(f"{what} is {show(value)}, not a date or a timestamp (ISO 8601)")


def instant(value: date | datetime) -> datetime:
    """A date compared with a timestamp counts as its midnight UTC."""
    return value if isinstance(value, datetime) else datetime.combine(value, MIDNIGHT, UTC)  # positional: faster


def _clock(value: Any, what: str) -> time:
    if isinstance(value, time):
        return value
    if isinstance(value, str):
        try:
            return time.fromisoformat(value)
        except ValueError:
            pass
    raise Unevaluable(f"{what} is {show(value)}, not a time of day")


def _temporal(value: Any) -> bool:
    return isinstance(value, (date, datetime)) or (isinstance(value, str) and value[:4].isdigit())


def ordered(left: Any, right: Any, what: str) -> tuple[Any, Any]:
    """Both sides in one ordered domain (numbers, dates and timestamps, durations, times of day)."""
    if isinstance(left, timedelta) or isinstance(right, timedelta):
        if isinstance(left, timedelta) and isinstance(right, timedelta):
            return left, right
        raise Unevaluable(f"{what} compares a duration with {show(right if isinstance(left, timedelta) else left)}")
    if isinstance(left, time) or isinstance(right, time):
        return _clock(left, what), _clock(right, "the compared value")
    if (
        isinstance(left, (date, datetime))
        or isinstance(right, (date, datetime))
        or (isinstance(left, str) and isinstance(right, str) and _temporal(left) and _temporal(right))
    ):
        return moments(left, right, what)
    return exact(left, what), exact(right, "the compared value")


def moments(left: Any, right: Any, what: str) -> tuple[date | datetime, date | datetime]:
    """Both sides as dates, or both as timestamps when either is one."""
    a, b = moment(left, what), moment(right, "the compared value")
    timed = isinstance(a, datetime)
    if timed is isinstance(b, datetime):
        return a, b
    # ``instant`` of each, inlined: a date with a timestamp is the commonest (``end_date minus start_date``); the
    # zone passed by position, not keyword (a third fewer instructions: keyword arguments are parsed per call)
    return (a, datetime.combine(b, MIDNIGHT, UTC)) if timed else (datetime.combine(a, MIDNIGHT, UTC), b)


def same(left: Any, right: Any) -> bool | None:
    """Equality of a date, timestamp, duration or time of day with another value; None when neither is one."""
    special = (date, datetime, time, timedelta)
    if not isinstance(left, special) and not isinstance(right, special):
        return None
    try:
        a, b = ordered(left, right, "the value")
    except Unevaluable:
        return False
    return bool(a == b)


def bounded(whole: int, what: str) -> int:
    """A whole-number result within ``LIMIT``: beyond it an overflow, as decimals have, not a silent huge number."""
    if -LIMIT < whole < LIMIT:
        return whole
    raise Unevaluable(f"{what} is too large to compute exactly")


def arithmetic(op: str, left: Any, right: Any, what: str) -> Any:
    """``left op right`` exactly: numbers as decimals, dates and timestamps with durations."""
    if type(left) is int and type(right) is int and op != "divided":  # whole numbers: exact already, and fast
        return bounded(left + right if op == "plus" else left - right if op == "minus" else left * right, what)
    if op in ("plus", "minus") and (_is_time(left) or _is_time(right)):
        return _time_arithmetic(op, left, right, what)
    a, b = exact(left, what), exact(right, what)
    try:
        if op == "plus":
            return _CONTEXT.add(a, b)
        if op == "minus":
            return _CONTEXT.subtract(a, b)
        if op == "times":
            return _CONTEXT.multiply(a, b)
        return _CONTEXT.divide(a, b)
    except DivisionByZero:
        raise Unevaluable(f"{what} divides by zero") from None
    except (Overflow, InvalidOperation):
        raise Unevaluable(f"{what} is too large to compute exactly") from None


def _is_time(value: Any) -> bool:
    return isinstance(value, (date, datetime, timedelta)) or (isinstance(value, str) and _temporal(value))


def _time_arithmetic(op: str, left: Any, right: Any, what: str) -> Any:
    if isinstance(right, timedelta):
        if isinstance(left, timedelta):
            return left + right if op == "plus" else left - right
        start = moment(left, what)
        if isinstance(start, datetime) or right % timedelta(days=1):
            return instant(start) + right if op == "plus" else instant(start) - right
        return start + right if op == "plus" else start - right
    if op == "minus":
        a, b = moments(left, right, what)
        return a - b  # type: ignore[operator]
    if isinstance(left, timedelta):
        return _time_arithmetic(op, right, left, what)
    raise Unevaluable(f"{what} adds two dates; add a duration (`start_date plus 3 days`)")


def numeric_total(items: list[Any], what: str) -> Any:
    """The exact sum of numbers, or of durations."""
    if _WHOLE.issuperset(map(type, items)):  # every item an int (not a bool), checked in C
        return bounded(sum(items), what)
    if all(isinstance(item, timedelta) for item in items):
        return sum(items, timedelta())
    total: Any = 0
    for item in items:
        total = arithmetic("plus", total, item, what)
    return total
