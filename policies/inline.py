"""The fast path of ``parser.parse``: the AST built while Lark parses, without a parse tree.

Lark's default builds a tree, propagates positions through it, and then ``ToAst`` walks it: two thirds of the
time of loading a large bundle. Here Lark's LALR parser calls :class:`~agentcore.policies.transform.ToAst`'s
methods as it reduces each rule. Positions follow Lark's ``propagate_positions``: a node spans its first to its
last child, keywords included, and the keywords around a rule inlined into its parent (the parentheses of
``(a or b)``) belong to the parent. A text with any error gives None, and the tree path parses it again to report
every error the way it always has.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from lark import Lark, Token
from lark.grammar import Terminal

from agentcore.policies import ast
from agentcore.policies.transform import ToAst

Reduce = Callable[[list[Any]], Any]


class _Node:
    """A value with the positions Lark's ``Meta`` would give its tree; ToAst's methods read it as their meta.

    ``outer_*`` is Lark's container: the span including the keywords of rules inlined into this node.
    """

    __slots__ = (
        "column",
        "empty",
        "end_column",
        "end_line",
        "end_pos",
        "line",
        "outer_column",
        "outer_end_column",
        "outer_end_line",
        "outer_end_pos",
        "outer_line",
        "outer_start_pos",
        "start_pos",
        "value",
    )
    empty: bool
    value: Any
    line: int
    column: int
    start_pos: int
    end_line: int
    end_column: int
    end_pos: int
    outer_line: int
    outer_column: int
    outer_start_pos: int
    outer_end_line: int
    outer_end_column: int
    outer_end_pos: int

    def __init__(self, children: list[Any]) -> None:
        self.empty = True
        self.value = None
        for child in children:
            if type(child) is _Node:
                if child.empty:
                    continue
                self.line = self.outer_line = child.outer_line
                self.column = self.outer_column = child.outer_column
                self.start_pos = self.outer_start_pos = child.outer_start_pos
            else:
                self.line = self.outer_line = child.line
                self.column = self.outer_column = child.column
                self.start_pos = self.outer_start_pos = child.start_pos
            self.empty = False
            break
        else:
            return
        for child in reversed(children):
            if type(child) is _Node:
                if child.empty:
                    continue
                self.end_line = self.outer_end_line = child.outer_end_line
                self.end_column = self.outer_end_column = child.outer_end_column
                self.end_pos = self.outer_end_pos = child.outer_end_pos
            else:
                self.end_line = self.outer_end_line = child.end_line
                self.end_column = self.outer_end_column = child.end_column
                self.end_pos = self.outer_end_pos = child.end_pos
            break

    def enclose(self, inner: Any) -> Any:
        """An inlined rule's only child, which keeps its own span and takes this node's as its container."""
        if type(inner) is _Node and not self.empty:
            if inner.empty:
                inner.line, inner.column, inner.start_pos = self.line, self.column, self.start_pos
                inner.end_line, inner.end_column, inner.end_pos = self.end_line, self.end_column, self.end_pos
                inner.empty = False
            inner.outer_line, inner.outer_column, inner.outer_start_pos = self.line, self.column, self.start_pos
            inner.outer_end_line, inner.outer_end_column = self.end_line, self.end_column
            inner.outer_end_pos = self.end_pos
        return inner


class InlineParser:
    """A Lark LALR parser whose reductions build the AST. Parses one text at a time (the builder is shared state;
    parsing holds the GIL anyway)."""

    def __init__(self, lark: Lark) -> None:
        self._lark = lark
        self._lock = threading.Lock()
        self._builder: ToAst | None = None
        callbacks: dict[Any, Any] = lark.parser.parser_conf.callbacks
        for rule in lark.rules:
            callbacks[rule] = self._reducer(rule)
        if lark.options._plugins:  # lark_cython: its tokens are not strings; convert those ToAst keeps, on shift
            for terminal in _kept_terminals(lark):
                callbacks[terminal] = _lark_token

    def parse(self, text: str, path: str, start: str) -> ast.PolicyFile | None:
        """The file's AST, or None when the text has a syntax or semantic error (the caller reports it)."""
        with self._lock:
            self._builder = ToAst(path, text)
            try:
                node: Any = self._lark.parse(text, start=start)  # the start rule's _Node (our callbacks)
            except Exception:  # every error is reported by the tree path, which parses the text again
                return None
            finally:
                self._builder = None
        result: ast.PolicyFile = node.value
        return result

    def _reducer(self, rule: Any) -> Reduce:
        """The callback Lark calls with the children of one reduction of ``rule``."""
        name = str(rule.alias or rule.origin.name)
        kept = tuple(
            (index, not symbol.is_term and symbol.name.startswith("_"))
            for index, symbol in enumerate(rule.expansion)
            if not (symbol.is_term and symbol.filter_out)
        )  # Lark drops keywords, and splices the children of helper rules (`_name`, repetitions) into the parent
        inlined = bool(rule.options.expand1 and not rule.alias)
        if inlined and kept == ((0, False),) and len(rule.expansion) == 1:
            return _only_child  # its one child already spans what this node would: Lark's positions unchanged
        helper = name.startswith("_")
        method = getattr(ToAst, name, None)

        indexes = [index for index, _ in kept]
        splices = any(splice for _, splice in kept)
        everything = not splices and len(kept) == len(rule.expansion)

        def reduce(children: list[Any]) -> Any:
            if everything:
                kept_children = children
            elif not splices:
                kept_children = [children[index] for index in indexes]
            else:
                kept_children = []
                for index, splice in kept:
                    if not splice:
                        kept_children.append(children[index])
                    elif kept_children:
                        kept_children += children[index].value
                    else:  # left recursion: reuse the list, so a long repetition stays linear
                        kept_children = children[index].value
            node = _Node(children)
            if inlined and len(kept_children) == 1:
                return node.enclose(kept_children[0])
            if helper:
                node.value = kept_children
                return node
            values = [c.value if type(c) is _Node else c for c in kept_children]
            builder = self._builder
            assert builder is not None
            if method is None:
                node.value = builder.__default__(name, values, node)  # type: ignore[arg-type]
            else:
                node.value = method(builder, node, values)
            return node

        return reduce


_only_child: Reduce = itemgetter(0)


def _kept_terminals(lark: Lark) -> set[str]:
    """The terminals some rule keeps as a child (names, strings, numbers; not the filtered-out keywords)."""
    return {str(s.name) for rule in lark.rules for s in rule.expansion if isinstance(s, Terminal) and not s.filter_out}


def _lark_token(token: Any) -> Token:
    """A lark_cython token as Lark's own (a ``str`` with the same type and positions), which ToAst reads."""
    return Token(
        token.type,
        token.value,
        token.start_pos,
        token.line,
        token.column,
        token.end_line,
        token.end_column,
        token.end_pos,
    )
