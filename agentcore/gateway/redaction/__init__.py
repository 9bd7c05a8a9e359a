"""Result redaction: by field path and by detector (secrets, emails, IBANs, Luhn-checked cards, phones).

Detectors run over every string, every dict key and the decimal text of every number; field rules match a key
path at any depth, literal dotted keys and JSON held in strings (an MCP result's text) included. Every
replacement is counted so the audit can say what was removed without storing it.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from agentcore.gateway.redaction.detectors import BUILT_IN, Detector, Span, keyed_secret

__all__ = ["ALIASES", "DETECTORS", "SUPPRESSED", "Detector", "Redaction", "detector", "redact_text"]

SUPPRESSED = "[SUPPRESSED BY POLICY]"
DETECTORS: dict[str, Detector] = {d.name: d for d in BUILT_IN}
# Aliases accepted in obligations (policy texts say "email addresses", "card numbers", ...).
ALIASES = {
    "emails": "email", "email_address": "email", "email_addresses": "email", "phones": "phone",
    "phone_number": "phone", "phone_numbers": "phone", "cards": "card", "card_number": "card",
    "card_numbers": "card", "credit_card": "card", "ibans": "iban", "secrets": "secret", "api_key": "secret",
    "api_keys": "secret", "access_keys": "secret", "credentials": "secret", "private_keys": "secret",
    "jwt": "secret", "jwts": "secret", "tokens": "secret",
}  # fmt: skip
_PRECEDENCE = {name: rank for rank, name in enumerate(DETECTORS)}


def detector(name: str) -> Detector:
    key = name.strip().lower().replace(" ", "_").replace("-", "_")
    found = DETECTORS.get(ALIASES.get(key, key))
    if found is None:
        raise ValueError(f"unknown redaction detector {name!r}; known: {', '.join(sorted(DETECTORS))}")
    return found


def redact_text(text: str, detectors: Iterable[Detector], counts: Counter[str]) -> str:
    """Replace every validated match of each detector with ``[REDACTED:<name>]``."""
    for det in detectors:
        spans = det.spans(text)
        if spans:
            counts[det.name] += len(spans)
            text = _replace(text, spans, f"[REDACTED:{det.name}]")
    return text


def _replace(text: str, spans: list[Span], label: str) -> str:
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts += (text[last:start], label)
        last = end
    parts.append(text[last:])
    return "".join(parts)


@dataclass(frozen=True)
class Redaction:
    """What to remove from one result: field paths (``a.b``, ``items.*.card``), detectors, or everything."""

    fields: tuple[str, ...] = ()
    detectors: tuple[str | Detector, ...] = ()
    suppress: bool = False

    def __bool__(self) -> bool:
        return bool(self.fields or self.detectors or self.suppress)

    @functools.cached_property
    def _detectors(self) -> tuple[Detector, ...]:
        """Built-in detectors in their order of precedence whatever the policy's order, then custom patterns."""
        found = [d if isinstance(d, Detector) else detector(d) for d in self.detectors]
        built_in = sorted({d for d in found if DETECTORS.get(d.name) is d}, key=lambda d: _PRECEDENCE[d.name])
        return (*built_in, *(d for d in found if DETECTORS.get(d.name) is not d))

    def apply(self, result: Any) -> tuple[Any, dict[str, int]]:
        """Return (redacted JSON-able result, counts by detector/field) — the counts go to the audit."""
        if self.suppress:
            return SUPPRESSED, {"suppressed": 1}
        counts: Counter[str] = Counter()
        value = to_jsonable_python(result, fallback=str)
        if self.fields:
            paths = [(path.split("."), path) for path in self.fields]
            value = _redact_fields(value, paths, counts)
        if self.detectors:
            value = _Scrub(self._detectors, counts).value(value)
        return value, dict(counts)

    def message(self, text: str, kind: str) -> tuple[str, dict[str, int]]:
        """A tool's error message, held to the same rules as its results.

        Field rules cannot be found in free text, so under them only the exception type (``kind``) is kept.
        """
        if self.suppress:
            return f"{kind} ({SUPPRESSED})", {"suppressed": 1}
        if self.fields:
            return f"{kind} (message withheld: the policy redacts fields of this tool's results)", {"withheld": 1}
        counts: Counter[str] = Counter()
        return redact_text(text, self._detectors, counts), dict(counts)


@dataclass
class _Scrub:
    """Detectors over strings, dict keys and numbers, anywhere in a JSON-able value."""

    detectors: tuple[Detector, ...]
    counts: Counter[str]

    def __post_init__(self) -> None:
        self.numeric = tuple(d for d in self.detectors if d.in_numbers)
        self.secrets = any(d is DETECTORS["secret"] for d in self.detectors)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return redact_text(value, self.detectors, self.counts)
        if isinstance(value, dict):
            return self.mapping(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, int | float) and not isinstance(value, bool) and self.numeric:
            text = str(value) if isinstance(value, int) else repr(value)
            redacted = redact_text(text, self.numeric, self.counts)
            return value if redacted == text else redacted
        return value

    def mapping(self, value: dict[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if self.secrets and isinstance(key, str) and isinstance(item, str) and keyed_secret(key, item):
                self.counts["secret"] += 1
                item = "[REDACTED:secret]"
            else:
                item = self.value(item)
            new_key = self.value(key) if isinstance(key, str) else key
            while new_key in out:  # two keys redacted to the same text: keep both values
                new_key = f"{new_key}'"
            out[new_key] = item
        return out


def _redact_fields(value: Any, paths: list[tuple[list[str], str]], counts: Counter[str]) -> Any:
    """Field paths match at every depth, and inside strings that hold JSON (an MCP result's text content)."""
    if isinstance(value, dict):
        for parts, path in paths:
            value = _redact_path(value, parts, path, counts)
        return {k: _redact_fields(v, paths, counts) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_fields(v, paths, counts) for v in value]
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        before = sum(counts.values())
        redacted = _redact_fields(parsed, paths, counts)
        return json.dumps(redacted, ensure_ascii=False) if sum(counts.values()) != before else value
    return value


def _redact_path(value: Any, parts: list[str], path: str, counts: Counter[str]) -> Any:
    if not parts:
        counts[f"field:{path}"] += 1
        return "[REDACTED]"
    head, rest = parts[0], parts[1:]
    if isinstance(value, dict):
        if head == "*":
            return {k: _redact_path(v, rest, path, counts) for k, v in value.items()}
        # "customer.dob" is also a literal key of that name
        taken = [(key, n) for n in range(1, len(parts) + 1) if (key := ".".join(parts[:n])) in value]
        if not taken:
            return value
        out = dict(value)
        for key, n in taken:
            out[key] = _redact_path(out[key], parts[n:], path, counts)
        return out
    if isinstance(value, list):
        if head == "*":
            return [_redact_path(v, rest, path, counts) for v in value]
        if head.isdigit() and int(head) < len(value):
            i = int(head)
            return [_redact_path(v, rest, path, counts) if n == i else v for n, v in enumerate(value)]
        # a field path applies to every element of a list of objects ("customers.email")
        return [_redact_path(v, parts, path, counts) for v in value]
    return value
