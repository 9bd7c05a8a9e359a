"""Policy regular expressions run on RE2, whose matching time is linear in the input: no pattern can hang a decision.

Python's ``re`` backtracks: ``^(\\w+\\s?)*$`` takes seconds on 25 characters and doubles per character. RE2 cannot
express backreferences or lookaround; a pattern that needs them fails to compile, with RE2's reason.
RE2's ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII-only; use ``\\pL``, ``\\pN`` or ``[[:alpha:]]`` for letters
beyond ASCII.
"""

from __future__ import annotations

from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the reason comes back in the exception; do not also print it to stderr


def compile_regex(pattern: str) -> Any:
    """The compiled RE2 pattern (``.search(text)`` as with ``re``); ``ValueError`` saying why it is refused."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "cannot compile"
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise ValueError(f"{text} (the linear-time RE2 engine has no backreferences or lookaround)") from None
