"""Tool names as model APIs accept them: ``^[A-Za-z0-9_-]{1,64}$``, deterministic and reversible by lookup.

Rule (documented in docs/gateway.md): join the optional target prefix and the tool name with ``__``, replace
every character outside ``[A-Za-z0-9_-]`` (the dots of ``crm.lookup``) with ``_``; if the result is longer than
64 characters, or two tools would get the same name, keep the first 55 characters and append ``_`` plus the
first 8 hex digits of the SHA-256 of ``prefix + NUL + tool`` (more, should that name clash again). The same
input always gives the same name.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

MAX_LEN = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_DIGITS = (8, 16, 32, MAX_LEN - 8)  # hex digits of each round's hash; the last leaves 7 readable characters


def _shorten(prefix: str | None, tool: str, safe: str, digits: int = 8) -> str:
    digest = hashlib.sha256(f"{prefix or ''}\0{tool}".encode()).hexdigest()[:digits]
    return f"{safe[: MAX_LEN - 1 - digits]}_{digest}"


def exposed_name(tool: str, prefix: str | None = None) -> str:
    """The model-safe name of ``tool`` (optionally under a target ``prefix``), before collision handling."""
    safe = _UNSAFE.sub("_", f"{prefix}__{tool}" if prefix else tool)
    return safe if len(safe) <= MAX_LEN else _shorten(prefix, tool, safe)


def name_map(tools: Iterable[tuple[str | None, str]]) -> dict[str, tuple[str | None, str]]:
    """Exposed name -> (prefix, tool) for every (prefix, tool); colliding names are all disambiguated by hash.

    A disambiguated name can itself clash (a tool registered under another's hashed name, or two hashes that
    agree): every pair still clashing is named again with a longer hash, so no tool ever loses its name to another.
    """
    first = {pair: exposed_name(pair[1], pair[0]) for pair in dict.fromkeys(tools)}
    names = dict(first)
    for digits in _DIGITS:
        counts = Counter(names.values())
        clashing = [pair for pair, name in names.items() if counts[name] > 1]
        if not clashing:
            return {name: pair for pair, name in names.items()}
        for prefix, tool in clashing:
            names[(prefix, tool)] = _shorten(prefix, tool, first[(prefix, tool)], digits)
    raise ValueError("tool names collide even under 56 hex digits of their hashes")  # not in practice
