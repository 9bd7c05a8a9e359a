"""Step one of the pipeline: policy text -> :class:`~agentcore.policies.ast.PolicyFile`.

Lark (LALR, contextual lexer) parses; ``transform.ToAst`` builds the frozen AST nodes. A valid file takes the fast
path (``inline``: the AST built as Lark reduces, no parse tree); a file with an error is parsed again into a tree.
Syntax errors are collected statement by statement (the parser restarts after the next full stop), so one run
reports all of them, each with ``file:line:col``, the line, a caret, the expected words and a "did you mean".
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import logging
from importlib import resources
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import PatternStr

from agentcore.policies import ast
from agentcore.policies.errors import PolicySyntaxError, Problem
from agentcore.policies.inline import InlineParser
from agentcore.policies.transform import LocatedError, ToAst
from agentcore.text import LONE_SURROGATE

logger = logging.getLogger(__name__)

MAX_ERRORS = 20
SCHEMA_SUFFIX = ".schema"
_SCHEMA_HELP = (
    "a schema file holds only resolver declarations (`resolver NAME(KEY: TYPE) returns TYPE.`); "
    "rules, definitions and defaults go in *.policy files"
)
_WORDS = {
    "NAME": "a tool name or argument path",
    "STRING": 'a quoted string like "text"',
    "NUMBER": "a number",
    "INT": "a whole number",
    "TIME": "a time like 09:00",
    "ATTR": "an attribute like .status",
    "UNIT": "a time unit (second, minute, hour, day, week)",
    "SCOPE": "a scope (user, agent, session, tenant)",
    "SEQ_SCOPE": "user, agent or tenant",
    "CALLS": '"calls"',
    "DAYSET": '"weekdays" or "weekends"',
    "WEEKDAY": "a day name like monday",
    "MONITOR": '"monitor"',
    "CURRENCY": '"USD"',
    "IN_THE": '"in the"',
    "AND_ALSO": '"and" before a further bound (as in `is more than 5 and less than 10`)',
    "$END": "the end of the file",
}


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    """The tree-building parser: it reports syntax errors and builds what the fast path cannot."""
    return _new_lark(propagate_positions=True)


def _inline(accelerated: bool = True) -> InlineParser:
    """The fast path's parser; ``accelerated``: on lark_cython where it is installed (the ``fast`` extra)."""
    return _inline_parser(bool(accelerated))  # one cache key per parser, however the caller spells the argument


@functools.cache
def _inline_parser(accelerated: bool) -> InlineParser:
    plugins = _cython_plugins() if accelerated else {}
    try:
        return InlineParser(_new_lark(propagate_positions=False, plugins=plugins))
    except Exception:
        if not plugins:
            raise
        # a lark_cython that does not fit the installed Lark: parse on pure Lark rather than not at all
        logger.warning("lark_cython could not build the policy grammar; parsing with pure Lark", exc_info=True)
        return _inline_parser(False)


def _cython_plugins() -> dict[str, Any]:
    """lark_cython runs Lark's lexer and LALR loop in Cython: about 15% less CPU to parse a large bundle. Only the
    fast path uses it; every error is still reported by the pure-Lark tree path, in the same words."""
    try:
        import lark_cython
    except ImportError:
        return {}
    plugins: dict[str, Any] = lark_cython.plugins
    return plugins


def _new_lark(propagate_positions: bool, plugins: dict[str, Any] | None = None) -> Lark:
    grammar = resources.files("agentcore.policies").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start=["start", "schema"],
        propagate_positions=propagate_positions,
        maybe_placeholders=False,
        _plugins=plugins or {},
    )


@functools.lru_cache(maxsize=1)
def _keywords() -> dict[str, str]:
    """Terminal name -> the literal keyword it stands for (anonymous keyword terminals only)."""
    return {t.name: t.pattern.value for t in _lark().terminals if isinstance(t.pattern, PatternStr)}


def keyword_words() -> frozenset[str]:
    """Every keyword of the language (for did-you-mean suggestions in other modules)."""
    return frozenset(v for v in _keywords().values() if v.isalpha())


def parse(text: str, path: str = "<policy>") -> ast.PolicyFile:
    """Parse one policy file (a schema file when ``path`` ends with ``.schema``); raise :class:`PolicySyntaxError`
    listing every syntax error found."""
    problems = _surrogates(text, path)
    rule = "schema" if path.endswith(SCHEMA_SUFFIX) else "start"
    built = None if problems else _inline().parse(text, path, rule)
    if built is not None:
        return built.model_copy(update={"comments": _comments(text)})
    tree = None if problems else _parse_collecting(text, path, problems, rule)
    if problems or tree is None:
        raise PolicySyntaxError(problems or [Problem("the policy could not be parsed", path)])
    comments = _comments(text)
    try:
        result: ast.PolicyFile = ToAst(path, text).transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, LocatedError):
            raise PolicySyntaxError([error.orig_exc.problem]) from None
        meta = getattr(error.obj, "meta", None)
        lines = text.splitlines()
        at_line: int = getattr(meta, "line", 0) if meta is not None and not getattr(meta, "empty", True) else 0
        at_column: int = getattr(meta, "column", 0) if at_line else 0
        source = lines[at_line - 1] if 0 < at_line <= len(lines) else ""
        problem = Problem(f"cannot read this statement: {error.orig_exc}", path, at_line, at_column, source)
        raise PolicySyntaxError([problem]) from None
    return result.model_copy(update={"comments": comments})


def _comments(text: str) -> tuple[ast.Comment, ...]:
    """Every ``#`` comment outside a quoted string, whole-line or after code, with its line."""
    comments = []
    for number, line in enumerate(text.splitlines(), start=1):
        quoted = escaped = False
        for index, char in enumerate(line):
            if quoted:
                escaped, quoted = char == "\\" and not escaped, quoted and (escaped or char != '"')
            elif char == '"':
                quoted = True
            elif char == "#":
                comments.append(ast.Comment(line=number, text=line[index:].rstrip()))
                break
    return tuple(comments)


def _surrogates(text: str, path: str) -> list[Problem]:
    """A lone surrogate (in a Python string, or a non-UTF-8 byte read with ``surrogateescape``) is not text."""
    found = LONE_SURROGATE.search(text)
    if found is None:
        return []
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    source = text.splitlines()[line - 1].encode("utf-8", "replace").decode("utf-8")
    code = ord(found.group())
    escaped = 0xDC80 <= code <= 0xDCFF
    what = f"byte 0x{code - 0xDC00:02X} is not UTF-8" if escaped else f"U+{code:04X} is a lone surrogate"
    return [Problem(f"{what}, so this is not text", path, line, column, source, "save the policy file as UTF-8")]


def _parse_collecting(text: str, path: str, problems: list[Problem], rule: str) -> Tree[Token] | None:
    lines = text.splitlines()
    start, first_tree = 0, None
    while start <= len(text) and len(problems) < MAX_ERRORS:
        # Blank out what was already handled (keeping newlines) so line/column stay true to the file.
        masked = "".join(c if c == "\n" else " " for c in text[:start]) + text[start:]
        try:
            tree = _lark().parse(masked, start=rule)
        except UnexpectedInput as error:
            problem = _problem(error, path, lines)
            if rule == "schema":
                problem = dataclasses.replace(problem, help=_SCHEMA_HELP)
            problems.append(problem)
            resume = _next_statement(text, error.pos_in_stream if error.pos_in_stream is not None else len(text))
            if resume is None or resume <= start:
                break
            start = resume
            continue
        if start == 0:
            first_tree = tree
        break
    return first_tree


def _next_statement(text: str, pos: int) -> int | None:
    """Offset just after the next statement-ending full stop at or after ``pos``."""
    for index in range(max(pos, 0), len(text)):
        if text[index] == "." and (index + 1 == len(text) or text[index + 1].isspace()):
            return index + 1
    return None


def _problem(error: UnexpectedInput, path: str, lines: list[str]) -> Problem:
    line, column = max(error.line, 1), max(error.column, 1)
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    if isinstance(error, UnexpectedToken):
        expected, found = error.accepts or error.expected, error.token
        got = "the end of the file" if found.type == "$END" else f"`{found}`"
    elif isinstance(error, UnexpectedCharacters):
        expected, found = error.allowed or set(), None
        got = f"`{source_line[column - 1 : column]}`" if source_line else "this character"
    else:
        assert isinstance(error, UnexpectedEOF)
        expected, found, got = set(error.expected), None, "the end of the file"
        line, column = len(lines) or 1, len(lines[-1]) + 1 if lines else 1
        source_line = lines[-1] if lines else ""
    words, value_help = _expected_words({name for name in expected if name in _keywords() or name[:2] != "__"})
    message = f"unexpected {got}; expected {_join(words)}" if words else f"unexpected {got}"
    help = _suggest(found, expected)
    if not help and found is not None and found.type == "NUMBER" and "NUMBER" not in expected:
        help = "a number is not allowed here; numbers follow a comparison, as in `amount is more than 500`"
    return Problem(message, path, line, column, source_line, help or value_help)


# Keywords that only start a longer phrase, shown whole so the message reads as the language does.
_PHRASES = {
    "at": '"at least" / "at most"',
    "more": '"more than"',
    "greater": '"greater than"',
    "less": '"less than"',
    "one": '"one of"',
    "starts": '"starts with"',
    "ends": '"ends with"',
    "has": '"has" (a quantifier\'s condition, or "has role")',
    "does": '"does not" (contain, start with, end with, match, have role)',
    "length": '"length of"',
    "sum": '"sum of"',
    "count": '"count of calls to"',
    "accelerator": '"accelerator spend of"',
}
_VALUE = "a value ({}an argument like amount, a lookup like order(order_id).status, or a computed value)"
_VALUE_HELP = (
    "a value is an argument (`amount`, `customer.tier`), a lookup (`order(order_id).status`), `length of items`, "
    "`sum of amount over refunds.issue in the last 1 day per user`, `count of calls to crm.* in the last 1 hour "
    'per user`, `accelerator spend of user today` or a detector score (`"pii" score of arguments`)'
)
_COMPARISON = 'a comparison ("is", "is not", "is more than", "is at most", "is one of", "contains", "<=", ...)'
_COMPARISON_HELP = (
    "comparisons: is, is not, =, !=, is more than, >, is at least, >=, is less than, <, is at most, <=, "
    "is between .. and .., is one of, contains, starts with, ends with, matches, is missing, is present, has role "
    "(and their `does not` forms)"
)
_LITERAL = 'a literal (a number like 500, a quoted string like "text", true, false or null)'
_OPERATOR = "an operator (plus, minus, times, divided by)"
_OPERATORS = frozenset({"plus", "+", "minus", "-", "times", "×", "divided", "÷"})


@functools.lru_cache(maxsize=1)
def _starts() -> dict[str, frozenset[str]]:
    """For each grammar rule, the terminals a phrase of it can start with (its FIRST set)."""
    rules = _lark().rules
    first: dict[str, set[str]] = {str(rule.origin.name): set() for rule in rules}
    empty: set[str] = set()
    changed = True
    while changed:
        changed = False
        for rule in rules:
            name = str(rule.origin.name)
            before = (len(first[name]), name in empty)
            for symbol in rule.expansion:
                if symbol.is_term:
                    first[name].add(symbol.name)
                    break
                first[name] |= first[symbol.name]
                if symbol.name not in empty:
                    break
            else:
                empty.add(name)
            changed = changed or before != (len(first[name]), name in empty)
    return {name: frozenset(terminals) for name, terminals in first.items()}


def _expected_words(expected: set[str]) -> tuple[list[str], str]:
    """The expected terminals in words. Where a whole comparison, value or literal may start, it is named once
    (with a help line listing its forms) instead of as the tokens it can start with, so the words follow the
    grammar as it grows."""
    starts = _starts()
    value = _VALUE.format("a number like 500, " if "NUMBER" in starts["value"] else "")
    words: list[str] = []
    helps: list[str] = []
    rest = set(expected)
    for rule, phrase, help in (
        ("predicate", _COMPARISON, _COMPARISON_HELP),
        ("value", value, _VALUE_HELP),
        ("literal", _LITERAL, ""),
    ):
        if starts[rule] <= expected:
            rest -= starts[rule]
            words.append(phrase)
            helps.append(help)
    operators = {name for name in rest if _keywords().get(name) in _OPERATORS}
    if len(operators) == len(_OPERATORS):  # after a value, arithmetic may continue: one phrase, not eight
        rest -= operators
        words.append(_OPERATOR)
    keywords = sorted({_word(name) for name in rest})
    return keywords + words, next((help for help in helps if help), "")


def _word(terminal: str) -> str:
    keyword = _keywords().get(terminal)
    if keyword is not None:
        return _PHRASES.get(keyword, f'"{keyword}"')
    return _WORDS.get(terminal, terminal.lower())


def _join(words: list[str]) -> str:
    if len(words) > 16:
        words = [*words[:16], "..."]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _suggest(found: Token | None, expected: set[str]) -> str:
    if found is None or not str(found).replace(".", "").replace("_", "").isalnum():
        return 'end every rule with a full stop: "deny files.delete."' if "DOT" in expected else ""
    candidates = [_keywords()[name] for name in expected if name in _keywords() and _keywords()[name].isalpha()]
    for name in expected:
        if name in ("SCOPE", "SEQ_SCOPE", "UNIT", "DAYSET", "WEEKDAY", "CALLS", "MONITOR"):
            candidates.extend(_alternatives(name))
    close = difflib.get_close_matches(str(found).lower(), candidates, n=1, cutoff=0.6)
    if close:
        return f"did you mean `{close[0]}`?"
    if "DOT" in expected:
        return "a rule ends with a full stop; a new rule starts with allow, deny, require, limit, redact or suppress"
    return ""


def _alternatives(terminal: str) -> list[str]:
    pattern = next(t.pattern for t in _lark().terminals if t.name == terminal)
    return [word for word in pattern.value.replace("(?:", "").replace(")", "").split("|") if word.isalpha()]
