"""Redaction detectors validate what they match (Luhn, IBAN mod-97) and field paths reach nested data.

The parametrized leaks are the variants of issue 14's "Redaction leaks" finding (all but the JWT, Google and Slack
controls passed through the detectors before); the error-text leak itself is in test_redaction_leaks.py.
"""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from agentcore.gateway.redaction import SUPPRESSED, Redaction, detector
from agentcore.gateway.redaction.detectors import DASHES, INVISIBLE

ALL = ("email", "card", "iban", "secret", "phone")
CARD = "4000000000000002"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n-----END RSA PRIVATE KEY-----"  # noqa: E501
SEPARATORS = (".", "/", "_", "\u00a0", "\t", "\n", "\u2013", "  ", "\u200b", " \u200b- ", "\u3000")
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


def _redacted(value: object) -> tuple[object, dict[str, int]]:
    return Redaction(detectors=ALL).apply(value)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to jane.doe+x@mail.example.co.uk now", "email"),
        ("card 4111 1111 1111 1111 ok", "card"),
        ("card 5500-0000-0000-0004 ok", "card"),
        ("amex 3782 822463 10005 ok", "card"),
        ("iban DE89 3704 0044 0532 0130 00 ok", "iban"),
        ("iban GB82WEST12345698765432 ok", "iban"),
        ("key AKIAIOSFODNN7EXAMPLE ok", "secret"),
        ("token ghp_" + "a" * 36 + " ok", "secret"),
        ("key sk-proj-" + "Ab3" * 10 + " ok", "secret"),
        ("call +1 (415) 555-0132 today", "phone"),
        ("call +34 912 345 678 today", "phone"),
        ("call 415-555-0132 today", "phone"),
    ],
)
def test_detectors_find_real_values(text: str, kind: str) -> None:
    out, counts = _redacted(text)
    assert f"[REDACTED:{kind}]" in str(out)
    assert counts[kind] == 1


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        *((f"card 4000{sep}0000{sep}0000{sep}0002 ok", "card") for sep in SEPARATORS),
        ("card 4000 0000 0000 0002 7 (qty)", "card"),  # a digit group adjacent
        ("card 7 4000 0000 0000 0002", "card"),
        (f"tool 'pay.charge' failed: ValueError: card {CARD} for x", "card"),
        ("card 4000 0000 0000 0002 12/27 123", "card"),  # expiry and CVV right after it
        ("card 4\u200b000000000000002 ok", "card"),  # a zero-width space inside a group
        ("mail jürgen@müller.example now", "email"),
        ("mail 用户@例子.广告 now", "email"),
        ("mail jane\uff20corp.example now", "email"),
        ("mail नमस्ते@उदाहरण.भारत now", "email"),
        ("iban de89 3704 0044 0532 0130 00 ok", "iban"),
        ("iban gb82west12345698765432 ok", "iban"),
        ("iban FR76-3000-6000-0112-3456-7890-189 ok", "iban"),
        ("key akiaiosfodnn7example ok", "secret"),
        ("key ASIAY34FZKBOKMUTVV7A ok", "secret"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "secret"),
        ('{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}', "secret"),
        (f"key: {PEM}\nthat was it", "secret"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "secret"),  # cut short
        (f"bearer {JWT}", "secret"),
        ("google AIzaSyA-1234567890abcdefghijklmnopqrstu ok", "secret"),
        ("slack xoxb-1234567890-abcdefghij ok", "secret"),
        ("github github_pat_11ABCDEFG0" + "x" * 72 + " ok", "secret"),
        ("azure DefaultEndpointsProtocol=https;AccountKey=" + "a1B2" * 21 + "==;", "secret"),
    ],
)
def test_the_variants_that_leaked_are_redacted(text: str, kind: str) -> None:
    out, counts = _redacted(text)
    assert counts.get(kind, 0) >= 1, out
    assert not re.search(r"4000\W*0000|jane|jürgen|wJalr|MIIE|AKIA|akia|de89|gb82|FR76|eyJ|xoxb|用户", str(out)), out


@pytest.mark.parametrize(
    "value",
    [
        4000000000000002,
        4000000000000002.0,
        {"amount": 4000000000000002},
        {"4000000000000002": "card as a key"},
        [[{"deep": ["card 4000 0000 0000 0002"]}]],
        {"card": {"number": 4000000000000002.5}},
    ],
)
def test_cards_as_numbers_keys_and_nested(value: object) -> None:
    out, counts = _redacted(value)
    assert counts == {"card": 1}
    assert "4000" not in str(out)


def test_keys_that_redact_to_the_same_text_keep_both_values() -> None:
    out, _ = _redacted({"4000000000000002": 1, "5500000000000004": 2})
    assert sorted(out.values()) == [1, 2]  # type: ignore[union-attr]


def test_a_secret_named_by_its_key_in_structured_data() -> None:
    out, counts = _redacted({"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "region": "eu"})
    assert out == {"aws_secret_access_key": "[REDACTED:secret]", "region": "eu"} and counts == {"secret": 1}


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 fails Luhn",
        "iban DE89 3704 0044 0532 0130 01 fails mod-97",
        "order 12345 shipped on 2024-01-02",
        "no secrets here",
        "order 12345678901234567890 is 20 digits",
        "created 1700000000123 (ms), 1700000000123456 (us)",  # timestamps: prefix 1 is no card's
        "at 2024-01-02 12:34:56.789012 UTC",
        "prices 12.50 13.75 14.20 and 1234.56",
        "host 192.168.100.200 and 10.0.0.1",
        "id 4155550132 is not a phone without separators",
        "version 1.2.3, pkg@1.2.3, @decorator.name",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "sha c2a8d2b3f7e41d5c8e8d4b1f9a6e2d3c4b5a6978",
        "sha 9fa4000000000000002bc1e3",  # a card's digits inside a hex word
    ],
)
def test_detectors_leave_look_alikes_alone(text: str) -> None:
    out, counts = _redacted(text)
    assert out == text and counts == {}


def test_a_plus_starts_a_phone_number_never_a_card() -> None:
    text = "call +2130057502208 or +1 415 555 0132"
    assert Redaction(detectors=("card",)).apply(text) == (text, {})
    assert Redaction(detectors=("card", "phone")).apply(text) == (
        "call [REDACTED:phone] or [REDACTED:phone]",
        {"phone": 2},
    )


@pytest.mark.parametrize("value", [1700000000123, 12345678901234567890, 3.141592653589793, True, None])
def test_numbers_that_are_not_cards_stay_numbers(value: object) -> None:
    assert _redacted({"v": value}) == ({"v": value}, {})


def test_every_unicode_dash_and_invisible_character_separates_groups() -> None:
    dashes = re.compile(f"[{DASHES}]")
    invisible = re.compile(f"[{INVISIBLE}]")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) == "Pd":
            assert dashes.match(char), hex(code)
        if code in (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD):
            assert invisible.match(char), hex(code)


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


def test_field_rules_match_literal_dotted_keys_any_depth_and_json_text() -> None:
    rule = Redaction(fields=("customer.dob",))
    out, counts = rule.apply({"customer.dob": "1990-01-01", "id": 1})
    assert out == {"customer.dob": "[REDACTED]", "id": 1} and counts == {"field:customer.dob": 1}
    mcp_result = {  # what an upstream MCP tool returns: structured content and the same data as JSON text
        "content": [{"type": "text", "text": '{"customer": {"dob": "1990-01-01", "name": "Jane"}}'}],
        "structuredContent": {"customer": {"dob": "1990-01-01", "name": "Jane"}},
    }
    out, counts = rule.apply(mcp_result)
    assert "1990" not in str(out) and "Jane" in str(out) and counts == {"field:customer.dob": 2}


def test_error_messages_follow_the_result_rules() -> None:
    text = f"ValueError: card {CARD} for jane@corp.example"
    assert Redaction(detectors=("card", "email")).message(text, "ValueError") == (
        "ValueError: card [REDACTED:card] for [REDACTED:email]",
        {"card": 1, "email": 1},
    )
    withheld, counts = Redaction(fields=("ssn",)).message("ValueError: ssn 123-45-6789", "ValueError")
    assert "123" not in withheld and withheld.startswith("ValueError") and counts == {"withheld": 1}
    assert "4000" not in Redaction(suppress=True).message(text, "ValueError")[0]


def test_detectors_apply_in_precedence_order_whatever_the_policy_order() -> None:
    iban = "DE89 3704 0044 0532 0130 00"
    assert Redaction(detectors=("card", "phone", "iban")).apply(iban) == ("[REDACTED:iban]", {"iban": 1})


def test_suppress_and_aliases() -> None:
    assert Redaction(suppress=True).apply({"secret": 1}) == (SUPPRESSED, {"suppressed": 1})
    assert detector("card numbers").name == "card"
    assert detector("Email addresses").name == "email"
    assert detector("api keys").name == detector("private keys").name == "secret"
    with pytest.raises(ValueError, match="known: card"):
        detector("passport")


def test_a_decision_without_obligations_gets_the_empty_redaction_without_hashing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nearly every call carries NO_OBLIGATIONS: it is recognised by identity (hashing the model cost a share of
    each call); other obligation sets are still built once and cached."""
    from agentcore.gateway.obligations import redaction_for
    from agentcore.policies.model import NO_OBLIGATIONS, Obligations

    def unhashable(self: Obligations) -> int:
        raise AssertionError("hashed")

    monkeypatch.setattr(Obligations, "__hash__", unhashable)
    assert not redaction_for(NO_OBLIGATIONS) and redaction_for(NO_OBLIGATIONS) is redaction_for(NO_OBLIGATIONS)
    monkeypatch.undo()
    fields = Obligations(redact_fields=("card",))
    assert redaction_for(fields).fields == ("card",) and redaction_for(fields) is redaction_for(fields)
