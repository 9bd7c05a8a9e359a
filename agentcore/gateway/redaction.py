"""Result redaction: by field path and by detector (emails, phones, Luhn-checked cards, IBANs, API keys).

Detectors validate what they match (Luhn, IBAN mod-97, digit counts) so that order numbers and timestamps are
not mangled; every replacement is counted so the audit can say what was removed without storing it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

SUPPRESSED = "[SUPPRESSED BY POLICY]"


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(match: str) -> bool:
    digits = re.sub(r"[ -]", "", match)
    return 13 <= len(digits) <= 19 and _luhn(digits)


def _iban(match: str) -> bool:
    compact = match.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}")


def _phone(match: str) -> bool:
    return 8 <= sum(c.isdigit() for c in match) <= 15 and not _DATE.fullmatch(match)


@dataclass(frozen=True)
class Detector:
    """A named pattern plus an optional validator of each match."""

    name: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] | None = None


DETECTORS: dict[str, Detector] = {
    d.name: d
    for d in (
        Detector("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")),
        Detector("card", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), _card),
        Detector("iban", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}\b"), _iban),
        Detector(
            "api_key",
            re.compile(
                r"\b(?:AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"
                r"|sk_(?:live|test)_[A-Za-z0-9]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}"
                r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
            ),
        ),
        Detector("phone", re.compile(r"(?<![\w+])\+?\(?\d[\d ().-]{6,18}\d(?![\w])"), _phone),
    )
}
# Aliases accepted in obligations (policy texts say "email addresses", "card numbers", ...).
ALIASES = {
    "emails": "email", "email_address": "email", "email_addresses": "email", "phones": "phone",
    "phone_number": "phone", "phone_numbers": "phone", "cards": "card", "card_number": "card",
    "card_numbers": "card", "credit_card": "card", "ibans": "iban", "api_keys": "api_key", "secrets": "api_key",
}  # fmt: skip


def detector(name: str) -> Detector:
    key = name.strip().lower().replace(" ", "_").replace("-", "_")
    found = DETECTORS.get(ALIASES.get(key, key))
    if found is None:
        raise ValueError(f"unknown redaction detector {name!r}; known: {', '.join(sorted(DETECTORS))}")
    return found


def redact_text(text: str, detectors: Iterable[Detector], counts: Counter[str]) -> str:
    """Replace every valid match of each detector with ``[REDACTED:<name>]``."""
    for det in detectors:

        def replace(match: re.Match[str], det: Detector = det) -> str:
            if det.valid is not None and not det.valid(match.group(0)):
                return match.group(0)
            counts[det.name] += 1
            return f"[REDACTED:{det.name}]"

        text = det.pattern.sub(replace, text)
    return text


@dataclass(frozen=True)
class Redaction:
    """What to remove from one result: field paths (``a.b``, ``items.*.card``), detectors, or everything."""

    fields: tuple[str, ...] = ()
    detectors: tuple[str | Detector, ...] = ()
    suppress: bool = False

    def __bool__(self) -> bool:
        return bool(self.fields or self.detectors or self.suppress)

    def apply(self, result: Any) -> tuple[Any, dict[str, int]]:
        """Return (redacted JSON-able result, counts by detector/field) — the counts go to the audit."""
        counts: Counter[str] = Counter()
        if self.suppress:
            return SUPPRESSED, {"suppressed": 1}
        value = to_jsonable_python(result, fallback=str)
        for path in self.fields:
            value = _redact_path(value, path.split("."), path, counts)
        dets = [d if isinstance(d, Detector) else detector(d) for d in self.detectors]
        if dets:
            value = _walk_strings(value, lambda s: redact_text(s, dets, counts))
        return value, dict(counts)


def _redact_path(value: Any, parts: list[str], path: str, counts: Counter[str]) -> Any:
    if not parts:
        counts[f"field:{path}"] += 1
        return "[REDACTED]"
    head, rest = parts[0], parts[1:]
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head] if head in value else []
        return {k: (_redact_path(v, rest, path, counts) if k in keys else v) for k, v in value.items()}
    if isinstance(value, list):
        if head == "*":
            return [_redact_path(v, rest, path, counts) for v in value]
        if head.isdigit() and int(head) < len(value):
            i = int(head)
            return [_redact_path(v, rest, path, counts) if n == i else v for n, v in enumerate(value)]
        # a field path applies to every element of a list of objects ("customers.email")
        return [_redact_path(v, parts, path, counts) for v in value]
    return value


def _walk_strings(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _walk_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk_strings(v, fn) for v in value]
    return value
