"""Built-in detectors: a regex finds candidates, a locator validates each and says which spans to remove.

Validation (Luhn and card digit layouts, IBAN length per country and mod-97, token formats) is what lets the
patterns accept any separator, digit script or letter case without mangling order ids, timestamps and prices.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

Span = tuple[int, int]

# Every Unicode dash (category Pd) plus the minus signs; characters that render as nothing may appear anywhere.
DASHES = (
    "\\-\u058a\u05be\u1400\u1806\u2010-\u2015\u2043\u2212\u2e17\u2e1a\u2e3a\u2e3b\u2e40\u2e5d\u301c"
    "\u3030\u30a0\ufe31\ufe32\ufe58\ufe63\uff0d\U00010ead"
)
INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff"
)
# What may stand between a card number's digit groups: whitespace, dashes, dots, slashes, underscores (any width).
SEPARATORS = f"\\s{DASHES}./_\u00b7\u30fb\uff0e\uff0f\uff3f"
# Combining marks and the Indic blocks: letters of IDN addresses that ``\w`` does not cover on its own.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    "\u0900-\u0dff\u0e31-\u0e3a\u0e47-\u0e4e\u0eb1-\u0ebc\u0ec8-\u0ecd\u1ab0-\u1aff\u1dc0-\u1dff\u200c\u200d"
    "\u20d0-\u20ff\ufe20-\ufe2f"
)


def whole(match: re.Match[str]) -> Iterable[Span]:
    return (match.span(),)


@dataclass(frozen=True)
class Detector:
    """A named pattern; ``locate`` validates a match and returns the spans to redact (by default all of it).

    ``needs``: lower-case strings of which the text must contain one for the pattern to be worth running (a
    substring search is a hundred times faster than a scan with a case-insensitive alternation).
    ``in_numbers``: whether JSON numbers are checked too (their decimal text), as for card numbers.
    """

    name: str
    pattern: re.Pattern[str]
    locate: Callable[[re.Match[str]], Iterable[Span]] = whole
    needs: tuple[str, ...] = ()
    in_numbers: bool = True

    def spans(self, text: str) -> list[Span]:
        if self.needs:
            lowered = text.lower()
            if not any(needle in lowered for needle in self.needs):
                return []
        return [span for match in self.pattern.finditer(text) for span in self.locate(match)]


# ---- card numbers -------------------------------------------------------------------------------------------
_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)


def luhn(digits: str) -> bool:
    """The Luhn checksum over decimal digits of any script."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        total += _DOUBLED[int(char)] if index % 2 else int(char)
    return total % 10 == 0


def is_card(digits: str) -> bool:
    """13-19 digits, a payment-card industry prefix (2-6: Mastercard, Amex, Visa, Discover, JCB, ...), Luhn."""
    return 13 <= len(digits) <= 19 and 2 <= int(digits[0]) <= 6 and luhn(digits)


def _card_layout(sizes: list[int]) -> bool:
    """How card numbers are printed: one run, groups of four (the last one shorter), or 4-6-5 / 4-6-4."""
    if len(sizes) == 1:
        return 13 <= sizes[0] <= 19
    if sizes in ([4, 6, 5], [4, 6, 4]):
        return True
    return sizes[0] == 4 and all(size == 4 for size in sizes[1:-1]) and sizes[-1] <= 4


# A run of digit groups with at least 13 digits; a run of digits is taken whole (one step, not one per digit).
_GAP = f"[{SEPARATORS}{INVISIBLE}]"
_CARD = re.compile(f"\\d(?=(?:{_GAP}{{0,4}}\\d){{12}})\\d*(?:{_GAP}{{1,4}}\\d+)*")
_DIGIT_GROUP = re.compile(f"\\d(?:[{INVISIBLE}]*\\d)*")
_INVISIBLE = re.compile(f"[{INVISIBLE}]+")
_DIGITS = re.compile(r"\d+")


def _card_spans(match: re.Match[str]) -> Iterable[Span]:
    """Cards among a run of digit groups, so that an adjacent group ("... 1111 7", "5 4111 ...") hides none.

    A window of consecutive groups is a card when it is laid out like one and its digits pass ``is_card``. What
    keeps ordinary numbers intact: a contiguous run of more than 19 digits (an order id) is one group, never
    searched inside; a run glued to a letter is searched only from that end (``DE89 3704 ...``: an IBAN's tail)
    and one inside a word (a hex hash) not at all; no card starts right after a ``+`` (a phone's country code).
    Invisible characters are read as nothing first, then as separators.
    """
    text = match.group()
    separated = _card_windows(match, [(g.start(), g.end(), g.group()) for g in _DIGITS.finditer(text)])
    if not _INVISIBLE.search(text):
        return separated
    joined = [(g.start(), g.end(), _INVISIBLE.sub("", g.group())) for g in _DIGIT_GROUP.finditer(text)]
    return _card_windows(match, joined) or separated


def _card_windows(match: re.Match[str], groups: list[tuple[int, int, str]]) -> list[Span]:
    base, text = match.start(), match.string
    glued_left = base > 0 and text[base - 1].isalpha()
    glued_right = match.end() < len(text) and text[match.end()].isalpha()
    if glued_left and glued_right and len(groups) == 1:
        return []  # digits inside a word: a hash, a token
    spans: list[Span] = []
    start = 1 if base > 0 and text[base - 1] == "+" else 0  # "+44 ...": a phone's country code, no card's start
    while start < len(groups) and not (glued_left and start > 0 and not spans):
        first = len(groups[start][2])
        widths = range(min(5, len(groups) - start), 1, -1) if first == 4 else (1,) if 13 <= first <= 19 else ()
        for width in widths:
            if glued_right and start + width < len(groups):
                continue
            window = groups[start : start + width]
            if _card_layout([len(g[2]) for g in window]) and is_card("".join(g[2] for g in window)):
                spans.append((base + window[0][0], base + window[-1][1]))
                start += width
                break
        else:
            start += 1
    return spans


# ---- IBAN -----------------------------------------------------------------------------------------------------
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27, "BR": 29,
    "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
    "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "SO": 23, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip
# Anchored on the check digits (a scan for digits is fast), the country code looked behind; the rest looked ahead
# so that a look-alike before an IBAN ("ab12 DE89 ...") does not swallow it.
_IBAN = re.compile(r"[0-9]{2}(?<=[A-Za-z]{2}[0-9]{2})(?=(?:[\s\-]{0,2}[A-Za-z0-9]){11,32})")
_ALNUM = re.compile(r"[A-Za-z0-9]")


def is_iban(compact: str) -> bool:
    """Upper-cased, separators removed: the country's length and the ISO 7064 mod-97 check."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _iban_spans(match: re.Match[str]) -> Iterable[Span]:
    """Exactly as many characters as the country's IBANs have, so a word after the number is not taken in."""
    start, string = match.start() - 2, match.string
    length = IBAN_LENGTHS.get(string[start : start + 2].upper())
    if length is None or (start > 0 and string[start - 1].isascii() and string[start - 1].isalnum()):
        return ()
    chars = list(itertools.islice(_ALNUM.finditer(string, start, start + 3 * length), length))
    if len(chars) < length:
        return ()
    end = chars[-1].end()
    if string[end : end + 1].isalnum():
        return ()  # glued to more letters or digits: part of a longer token
    return ((start, end),) if is_iban("".join(c.group() for c in chars).upper()) else ()


# ---- e-mail addresses and phone numbers -------------------------------------------------------------------
_LOCAL = f"[\\w{_MARKS}.!#$%&'*+/=?^`{{|}}~-]"
_LABEL = f"[\\w{_MARKS}](?:[\\w{_MARKS}-]*[\\w{_MARKS}])?"
_AT, _DOT = "@\uff20\ufe6b", ".\uff0e\u3002\uff61"
_EMAIL = re.compile(
    f"(?<!{_LOCAL}){_LOCAL}+[{_AT}]{_LABEL}(?:[{_DOT}]{_LABEL})*[{_DOT}](?:xn--[\\w-]+|(?:[^\\W\\d_]|[{_MARKS}]){{2,}})"
)

_PHONE = re.compile(r"[+(\d][\d ().-]{6,19}\d")
_PHONE_GROUP = re.compile(r"\d+")
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")


def _phone_spans(match: re.Match[str]) -> Iterable[Span]:
    """8-15 digits; without a ``+`` or an area code in parentheses, at least three groups of two digits or more,
    one kind of separator: a bare run of digits is an id, ``12.50 13.75`` a list of prices, not a phone."""
    text, (start, end), string = match.group(), match.span(), match.string
    if (start and (string[start - 1].isalnum() or string[start - 1] in "_+")) or string[end : end + 1].isalnum():
        return ()  # part of a longer token
    hyphen_before = start >= 2 and string[start - 1] == "-" and string[start - 2].isalnum()
    if hyphen_before or (string[end : end + 1] == "-" and string[end + 1 : end + 2].isalnum()):
        return ()  # hyphen-joined into a longer token: a UUID's groups, not a phone
    if text[0] in "+(" and not (text[1].isdigit() or text[:2] == "+("):
        return ()
    groups = _PHONE_GROUP.findall(text)
    if not 8 <= sum(map(len, groups)) <= 15 or _DATE.match(text) or _IPV4.fullmatch(text):
        return ()
    if text[0] in "+(" or "(" in text:
        return (match.span(),)
    plain = len(groups) >= 3 and min(map(len, groups)) >= 2 and not ("." in text and " " in text)
    return (match.span(),) if plain else ()


# ---- secrets: cloud and API credentials, JWTs, PEM private keys ---------------------------------------------
_SECRET = re.compile(
    r"(?i:-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z))"
    r"|(?i:(?:aws[_-]?)?secret[_-]?access[_-]?key|aws[_-]?secret(?:[_-]?key)?)[\"'\\]{0,3}\s*[:=]\s*[\"'\\]{0,3}"
    r"(?P<aws>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
    r"|(?i:AccountKey|SharedAccessKey|[?&]sig)=(?P<azure>[A-Za-z0-9+/%]{20,}={0,2})"
    r"|(?<![A-Za-z0-9])(?:"
    r"(?i:A(?:KI|SI)A[A-Z0-9]{16})(?![A-Za-z0-9])"  # AWS access key ids, in any case
    r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255}|glpat-[A-Za-z0-9_-]{20,}"
    r"|sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}|hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"
    r"|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[A-Za-z0-9_-]{20,}"  # Google API keys, OAuth
    r"|[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"  # Azure AD client secrets
    r"|eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)?"  # JWT/JWE
    r")"
)
_SECRET_NEEDLES = ("-----begin", "secret", "accountkey", "sharedaccesskey", "sig=", "akia", "asia", "ghp_", "gho_",
                   "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "sk_", "rk_", "xox", "xapp-",
                   "hooks.slack.com", "aiza", "ya29.", "gocspx-", "q~", "eyj")  # fmt: skip
_SECRET_FIELD = re.compile(r"(?i)(?:aws[_-]?)?secret[_-]?(?:access[_-]?)?key|aws[_-]?secret")
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")


def _secret_spans(match: re.Match[str]) -> Iterable[Span]:
    """The value only where a key name gave the secret away (``aws_secret_access_key=...``, ``AccountKey=...``)."""
    for context in ("aws", "azure"):
        if match.group(context) is not None:
            return (match.span(context),)
    return (match.span(),)


def keyed_secret(key: str, value: str) -> bool:
    """An AWS secret key in structured data: a 40-character value under a key that names it."""
    return _AWS_SECRET.fullmatch(value) is not None and _SECRET_FIELD.search(key) is not None


# In order of precedence: secrets hold digit runs and e-mail-like text, IBANs hold card-like digit runs.
BUILT_IN = (
    Detector("secret", _SECRET, _secret_spans, needs=_SECRET_NEEDLES, in_numbers=False),
    Detector("email", _EMAIL, needs=tuple(_AT), in_numbers=False),
    Detector("iban", _IBAN, _iban_spans, in_numbers=False),
    Detector("card", _CARD, _card_spans),
    Detector("phone", _PHONE, _phone_spans, in_numbers=False),
)
