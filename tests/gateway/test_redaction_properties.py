"""Generated variants: cards in any separator, digit script, number type and position, IDN e-mails, IBANs in any
case and grouping. Nothing detectable survives redaction; look-alike numbers come out unchanged."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentcore.gateway.redaction import Redaction
from agentcore.gateway.redaction.detectors import IBAN_LENGTHS, luhn

ALL = ("email", "card", "iban", "secret", "phone")
SETTINGS = settings(max_examples=150, deadline=None, database=None)  # nothing written into the repository
BRANDS = {"4": (13, 16, 19), "51": (16,), "55": (16,), "2221": (16,), "34": (15,), "37": (15,), "6011": (16, 19),
          "65": (16,), "35": (16,), "36": (14,), "62": (16, 19)}  # fmt: skip
SCRIPTS = (0x30, 0xFF10, 0x660, 0x6F0, 0x966, 0x9E6, 0xE50)  # ASCII, fullwidth, Arabic-Indic, ..., Thai
SEPARATORS = (" ", "-", ".", "/", "_", "\u00a0", "\t", "\n", "\u2013", "\u2014", "\u2212", "\u3000", "  ", " - ",
              "\u200b", " \u200b", "\ufeff")  # fmt: skip
WORDS = st.text(alphabet=st.sampled_from("abcdefghij XYZ:,;()é中"), max_size=12)


@st.composite
def cards(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(sorted(BRANDS)))
    length = draw(st.sampled_from(BRANDS[prefix]))
    body = prefix + "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=length - len(prefix) - 1,
                                          max_size=length - len(prefix) - 1)))  # fmt: skip
    return next(body + d for d in "0123456789" if luhn(body + d))


@st.composite
def printed(draw: st.DrawFn, digits: str) -> str:
    """The card as a person or a system prints it: grouped or not, any separator per gap, any digit script."""
    zero = draw(st.sampled_from(SCRIPTS))
    local = "".join(chr(zero + int(d)) for d in digits)
    if len(digits) == 15 and draw(st.booleans()):
        groups = [local[:4], local[4:10], local[10:]]
    elif draw(st.booleans()):
        groups = [local[i : i + 4] for i in range(0, len(local), 4)]
    else:
        groups = [local]
    out = groups[0]
    for group in groups[1:]:
        out += draw(st.sampled_from(SEPARATORS)) + group
    return out


def _digits(value: Any) -> str:
    """Every decimal digit left in the redacted value, in ASCII, separators dropped."""
    text = json.dumps(value, ensure_ascii=False)
    return "".join(str(unicodedata.digit(c)) for c in text if unicodedata.category(c) == "Nd")


@SETTINGS
@given(card=cards(), data=st.data())
def test_no_card_survives_any_separator_script_or_position(card: str, data: st.DataObject) -> None:
    text = data.draw(printed(card))
    before, after = data.draw(WORDS), data.draw(WORDS)
    adjacent = data.draw(st.sampled_from(["", " 7", " 12/27", " 12/27 123"]))
    sentence = f"{before} {text}{adjacent} {after}"
    value = data.draw(
        st.sampled_from(
            [
                sentence,
                {"note": sentence},
                {sentence: "as a key"},
                [[{"deep": [sentence]}]],
                {"card": int(card)},
                {"amount": float(card)} if int(card) < 2**53 else {"card": int(card)},
                f"tool 'pay.charge' failed: ValueError: {sentence}",
            ]
        )
    )
    out, counts = Redaction(detectors=ALL).apply(value)
    assert counts.get("card", 0) >= 1
    assert card not in _digits(out), out
    assert Redaction(detectors=ALL).apply(out)[1] == {}  # nothing detectable is left


LOCAL = st.text(alphabet=st.sampled_from("abcxyz019.+_-üéßçñ中文कमल"), min_size=1, max_size=12)
LABEL = st.text(alphabet=st.sampled_from("abcdefxyz0123-üé中文भारत"), min_size=1, max_size=10)
TLD = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=2, max_size=6) | st.sampled_from(
    ["中国", "भारत", "рф", "xn--p1ai"]
)


@SETTINGS
@given(local=LOCAL, labels=st.lists(LABEL, min_size=1, max_size=3), tld=TLD, at=st.sampled_from("@\uff20\ufe6b"),
       dot=st.sampled_from(".\uff0e\u3002"), before=WORDS, after=WORDS)  # fmt: skip
def test_no_email_survives(local: str, labels: list[str], tld: str, at: str, dot: str, before: str, after: str) -> None:
    labels = [label.strip("-") or "x" for label in labels]
    local = local.strip(".") or "x"
    address = local + at + dot.join([*labels, tld])
    out, counts = Redaction(detectors=ALL).apply(f"{before} {address} {after}")
    assert counts.get("email") == 1, out
    assert at not in out and address not in out


@st.composite
def ibans(draw: st.DrawFn) -> str:
    country = draw(st.sampled_from(sorted(IBAN_LENGTHS)))
    bban = "".join(draw(st.lists(st.sampled_from("0123456789ABCXYZ"), min_size=IBAN_LENGTHS[country] - 4,
                                 max_size=IBAN_LENGTHS[country] - 4)))  # fmt: skip
    numeric = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    return f"{country}{98 - numeric % 97:02d}{bban}"


@SETTINGS
@given(iban=ibans(), lower=st.booleans(), sep=st.sampled_from(["", " ", "-", "\u00a0"]), after=WORDS)
def test_no_iban_survives_any_case_or_grouping(iban: str, lower: bool, sep: str, after: str) -> None:
    text = sep.join(iban[i : i + 4] for i in range(0, len(iban), 4))
    out, counts = Redaction(detectors=ALL).apply(f"pay to {text.lower() if lower else text} {after}")
    assert counts.get("iban") == 1, out
    assert iban not in re.sub(r"[\s\-]", "", out).upper()


LOOK_ALIKES = st.one_of(
    st.integers(min_value=10**19, max_value=10**30).map(str),  # long order ids
    st.integers(min_value=1, max_value=10**12 - 1).map(str),  # short ids, amounts
    st.tuples(st.integers(946684800, 1999999999), st.sampled_from([1, 10**3, 10**6, 10**9]), st.integers(0, 10**9)).map(
        lambda t: str(t[0] * t[1] + t[2] % t[1])
    ),  # epoch s/ms/us/ns timestamps, 2000 to 2033 (prefix 1)
    st.datetimes().map(lambda t: t.isoformat(sep=" ")),
    st.datetimes().map(lambda t: t.strftime("%d/%m/%Y %H:%M")),
    st.lists(st.decimals(min_value=0, max_value=10**6, places=2).map(str), min_size=2, max_size=6).map(" ".join),
    st.tuples(*[st.integers(0, 255)] * 4).map(lambda ip: ".".join(map(str, ip))),
    st.uuids().map(str),
    st.binary(min_size=20, max_size=32).map(bytes.hex),
    st.integers(min_value=10**9, max_value=10**14).map(lambda n: f"+{n}"),  # phone numbers are not cards
)


@SETTINGS
@given(value=LOOK_ALIKES, before=WORDS)
@example(value="14d9bc2b-1364-4326-7011-f9d867c01e4a", before="")  # a UUID whose middle groups read as a phone
def test_look_alikes_are_left_alone(value: str, before: str) -> None:
    text = f"{before} {value}"
    assert Redaction(detectors=("email", "card", "iban", "secret")).apply(text) == (text, {})
    if not value.startswith("+"):
        assert Redaction(detectors=("phone",)).apply(text) == (text, {})
