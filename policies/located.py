"""Pydantic validation errors as ``file:line: field: message`` lines, like the policy errors.

A test file (TOML) or a request (JSON) that does not validate is reported at the line of each offending key,
found by following the error's location through the text (``case[1].expect`` is the ``expect`` key after the
second ``[[case]]`` header), without the pydantic URL or type tags.
"""

from __future__ import annotations

import re

from pydantic import ValidationError


def _key_pattern(key: str) -> re.Pattern[str]:
    name = re.escape(key)
    # a TOML table header ([key], [[key]], [a.key]), a TOML assignment (key = ...), or a JSON member ("key": ...)
    return re.compile(rf'(?m)^[ \t]*\[\[?[ \t]*(?:[\w."-]+\.)?"?{name}"?\s*\]\]?|(?<![\w-])"?{name}"?\s*=|"{name}"\s*:')


def _line(text: str, location: tuple[int | str, ...]) -> int:
    """The line of the deepest key of ``location`` found in order in ``text`` (1 if none is found)."""
    position, previous = 0, None
    for part in location:
        if isinstance(part, int):
            if previous is None:
                continue
            for _ in range(part):  # the n-th item of an array of tables is the n-th header
                found = previous.search(text, position + 1)
                if found is None:
                    break
                position = found.start()
            continue
        previous = _key_pattern(part)
        found = previous.search(text, position)
        if found is None:
            break
        position = found.start()
    return text.count("\n", 0, position) + 1


def _field(location: tuple[int | str, ...]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location).lstrip(".")


def located(error: ValidationError, text: str, origin: str) -> str:
    """One ``origin:line: field: message`` line per problem of ``error`` (sorted by line)."""
    lines = []
    for problem in error.errors(include_url=False):
        location = tuple(problem["loc"])
        got = f" (got {problem['input']!r})" if problem["type"] not in ("missing", "extra_forbidden") else ""
        where = _field(location) or "(top level)"
        lines.append((_line(text, location), f"{where}: {problem['msg']}{got}"))
    return "\n".join(f"{origin}:{line}: {message}" for line, message in sorted(lines))
