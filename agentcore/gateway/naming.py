"""Tool names as model APIs accept them: ``^[A-Za-z0-9_-]{1,64}$``, deterministic and reversible by lookup.

Rule (documented in docs/gateway.md): join the optional target prefix and the tool name with ``__``, replace
every character outside ``[A-Za-z0-9_-]`` (the dots of ``crm.lookup``) with ``_``; if the result is longer than
64 characters, or two tools would get the same name, keep the first 55 characters and append ``_`` plus the
first 8 hex digits of the SHA-256 of ``prefix + NUL + tool``. The same input always gives the same name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_LEN = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _shorten(prefix: str | None, tool: str, safe: str) -> str:
    digest = hashlib.sha256(f"{prefix or ''}\0{tool}".encode()).hexdigest()[:8]
    return f"{safe[: MAX_LEN - 9]}_{digest}"


def exposed_name(tool: str, prefix: str | None = None) -> str:
    """The model-safe name of ``tool`` (optionally under a target ``prefix``), before collision handling."""
    safe = _UNSAFE.sub("_", f"{prefix}__{tool}" if prefix else tool)
    return safe if len(safe) <= MAX_LEN else _shorten(prefix, tool, safe)


def name_map(tools: Iterable[tuple[str | None, str]]) -> dict[str, tuple[str | None, str]]:
    """Exposed name -> (prefix, tool) for every (prefix, tool); colliding names are all disambiguated by hash."""
    pairs = list(tools)
    first = {pair: exposed_name(pair[1], pair[0]) for pair in pairs}
    counts: dict[str, int] = {}
    for name in first.values():
        counts[name] = counts.get(name, 0) + 1
    result: dict[str, tuple[str | None, str]] = {}
    for (prefix, tool), name in first.items():
        if counts[name] > 1:
            name = _shorten(prefix, tool, name)
        result[name] = (prefix, tool)
    return result
