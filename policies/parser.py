"""Step one of the pipeline: policy text -> :class:`~agentcore.policies.ast.PolicyFile`.

Lark (LALR, contextual lexer) builds the parse tree; ``transform.ToAst`` turns it into frozen AST nodes.
Syntax errors are collected statement by statement (the parser restarts after the next full stop), so one run
reports all of them, each with ``file:line:col``, the line, a caret, the expected words and a "did you mean".
"""

from __future__ import annotations

import difflib
import functools
from importlib import resources

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import PatternStr

from agentcore.policies import ast
from agentcore.policies.errors import PolicySyntaxError, Problem
from agentcore.policies.transform import LocatedError, ToAst

MAX_ERRORS = 20
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
    "$END": "the end of the file",
}


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = resources.files("agentcore.policies").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)


@functools.lru_cache(maxsize=1)
def _keywords() -> dict[str, str]:
    """Terminal name -> the literal keyword it stands for (anonymous keyword terminals only)."""
    return {t.name: t.pattern.value for t in _lark().terminals if isinstance(t.pattern, PatternStr)}


def keyword_words() -> frozenset[str]:
    """Every keyword of the language (for did-you-mean suggestions in other modules)."""
    return frozenset(v for v in _keywords().values() if v.isalpha())


def parse(text: str, path: str = "<policy>") -> ast.PolicyFile:
    """Parse one policy file; raise :class:`PolicySyntaxError` listing every syntax error found."""
    problems: list[Problem] = []
    tree = _parse_collecting(text, path, problems)
    if problems or tree is None:
        raise PolicySyntaxError(problems or [Problem("the policy could not be parsed", path)])
    comments: list[ast.Comment] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            comments.append(ast.Comment(line=number, text=stripped))
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
    return result.model_copy(update={"comments": tuple(comments)})


def _parse_collecting(text: str, path: str, problems: list[Problem]) -> Tree[Token] | None:
    lines = text.splitlines()
    start, first_tree = 0, None
    while start <= len(text) and len(problems) < MAX_ERRORS:
        # Blank out what was already handled (keeping newlines) so line/column stay true to the file.
        masked = "".join(c if c == "\n" else " " for c in text[:start]) + text[start:]
        try:
            tree = _lark().parse(masked)
        except UnexpectedInput as error:
            problems.append(_problem(error, path, lines))
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
    words = sorted({_word(name) for name in expected if not name.startswith("__")})
    message = f"unexpected {got}; expected {_join(words)}" if words else f"unexpected {got}"
    return Problem(message, path, line, column, source_line, _suggest(found, expected))


def _word(terminal: str) -> str:
    keyword = _keywords().get(terminal)
    return f'"{keyword}"' if keyword is not None else _WORDS.get(terminal, terminal.lower())


def _join(words: list[str]) -> str:
    if len(words) > 12:
        words = [*words[:12], "..."]
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
