"""A small Wadler-style pretty printer: documents that print flat when they fit the width and break otherwise.

A document is text, :data:`LINE` (a space when its group prints flat, a new line when it breaks), a
:class:`Nest` (deeper indentation after its breaks), a :class:`Group` (flat if all of it fits on the current
line, else its own lines break; inner groups decide again) or a tuple of documents printed in order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Union


class _Line:
    """A break: a space when flat, a new line (at the current indentation) when its group breaks."""

    __slots__ = ()


LINE = _Line()


@dataclass(frozen=True, slots=True)
class Nest:
    indent: int
    doc: Doc


@dataclass(frozen=True, slots=True)
class Group:
    doc: Doc


Doc = Union[str, _Line, Nest, Group, tuple["Doc", ...]]  # noqa: UP007


def join(docs: Iterable[Doc], separator: Doc) -> tuple[Doc, ...]:
    """``docs`` with ``separator`` between each two."""
    out: list[Doc] = []
    for doc in docs:
        if out:
            out.append(separator)
        out.append(doc)
    return tuple(out)


def fill(docs: Iterable[Doc], separator: str = ",", *, lead: bool = False) -> tuple[Doc, ...]:
    """A list that wraps like a paragraph: each break is taken only when the next item does not fit.

    With ``lead`` the list starts with a break (a space when flat), so even its first item may wrap.
    """
    out: list[Doc] = []
    for doc in docs:
        out.append(Group((LINE, doc)) if out or lead else doc)
        out.append(separator)
    return tuple(out[:-1])


def render(doc: Doc, width: int) -> str:
    """Print ``doc`` in at most ``width`` columns where its breaks allow (a single long word still overflows)."""
    out: list[str] = []
    column = 0
    stack: list[tuple[int, bool, Doc]] = [(0, False, doc)]
    while stack:
        indent, flat, item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            column += len(item)
        elif isinstance(item, tuple):
            stack.extend((indent, flat, part) for part in reversed(item))
        elif isinstance(item, Nest):
            stack.append((indent + item.indent, flat, item.doc))
        elif isinstance(item, Group):
            stack.append((indent, flat or _fits(width - column, item.doc, stack), item.doc))
        elif flat:
            out.append(" ")
            column += 1
        else:
            out.append("\n" + " " * indent)
            column = indent
    return "".join(out)


def _fits(room: int, doc: Doc, rest: list[tuple[int, bool, Doc]]) -> bool:
    """Does ``doc`` printed flat, and what follows it up to the next break that is taken, fit in ``room``?"""
    pending: list[tuple[bool, Doc]] = [(flat, item) for _, flat, item in rest]
    pending.append((True, doc))
    while pending and room >= 0:
        flat, item = pending.pop()
        if isinstance(item, str):
            room -= len(item)
        elif isinstance(item, tuple):
            pending.extend((flat, part) for part in reversed(item))
        elif isinstance(item, (Nest, Group)):
            pending.append((flat, item.doc))
        elif flat:
            room -= 1
        else:
            return True
    return room >= 0
