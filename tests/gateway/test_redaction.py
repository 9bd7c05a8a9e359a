"""Redaction detectors validate what they match (Luhn, IBAN mod-97) and field paths reach nested data."""

from __future__ import annotations

import pytest

from agentcore.gateway.redaction import SUPPRESSED, Redaction, detector

ALL = ("email", "card", "iban", "api_key", "phone")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to jane.doe+x@mail.example.co.uk now", "email"),
        ("card 4111 1111 1111 1111 ok", "card"),
        ("card 5500-0000-0000-0004 ok", "card"),
        ("iban DE89 3704 0044 0532 0130 00 ok", "iban"),
        ("iban GB82WEST12345698765432 ok", "iban"),
        ("key AKIAIOSFODNN7EXAMPLE ok", "api_key"),
        ("token ghp_" + "a" * 36 + " ok", "api_key"),
        ("key sk-proj-" + "Ab3" * 10 + " ok", "api_key"),
        ("call +1 (415) 555-0132 today", "phone"),
        ("call +34 912 345 678 today", "phone"),
    ],
)
def test_detectors_find_real_values(text: str, kind: str) -> None:
    out, counts = Redaction(detectors=ALL).apply(text)
    assert f"[REDACTED:{kind}]" in out
    assert counts[kind] == 1


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 fails Luhn",
        "iban DE89 3704 0044 0532 0130 01 fails mod-97",
        "order 12345 shipped on 2024-01-02",
        "no secrets here",
    ],
)
def test_detectors_leave_look_alikes_alone(text: str) -> None:
    out, counts = Redaction(detectors=ALL).apply(text)
    assert out == text and counts == {}


def test_field_paths_wildcards_and_lists() -> None:
    result = {"customer": {"ssn": "1", "name": "A"}, "items": [{"card": "x", "n": 1}, {"card": "y", "n": 2}]}
    out, counts = Redaction(fields=("customer.ssn", "items.card")).apply(result)
    assert out == {
        "customer": {"ssn": "[REDACTED]", "name": "A"},
        "items": [{"card": "[REDACTED]", "n": 1}, {"card": "[REDACTED]", "n": 2}],
    }
    assert counts == {"field:customer.ssn": 1, "field:items.card": 2}
    out, _ = Redaction(fields=("*.name",)).apply({"a": {"name": "x"}, "b": {"name": "y", "k": 1}})
    assert out == {"a": {"name": "[REDACTED]"}, "b": {"name": "[REDACTED]", "k": 1}}


def test_suppress_and_aliases() -> None:
    assert Redaction(suppress=True).apply({"secret": 1}) == (SUPPRESSED, {"suppressed": 1})
    assert detector("card numbers").name == "card"
    assert detector("Email addresses").name == "email"
    with pytest.raises(ValueError, match="known: api_key"):
        detector("passport")
