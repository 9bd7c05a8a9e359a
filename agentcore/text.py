"""One spelling per string: NFKC without invisible characters, so look-alikes cannot slip past a comparison.

``ｍａｌｌｏｒｙ``, ``mallory\\u200b`` and ``mallory`` are one user, and ``api.example.com\\uff0f@evil.com`` is the
text a URL parser will really see once the tool receives it. Removed: Unicode's default-ignorable code points
(zero-width space and joiners, soft hyphen, word joiner, BOM, variation selectors, Hangul fillers, tag
characters...) and the bidi controls (all of which are default-ignorable), from DerivedCoreProperties.txt.

It lives beside ``errors`` because every layer compares identities with it: the policy engine, the gateway, memory,
and the accelerator ledger that budget rules read.
"""

from __future__ import annotations

import re
import unicodedata

# Default_Ignorable_Code_Point (Unicode 15.1 DerivedCoreProperties.txt); bidi controls (U+061C, U+200E-200F,
# U+202A-202E, U+2066-2069) are all inside these ranges.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)

# A lone surrogate is not text (no encoding can write it): always an error, never silently changed.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_text(text: str) -> str:
    """``text`` in canonical form: invisible characters removed, then NFKC (repeated until it is stable)."""
    if text.isascii():  # ASCII is already canonical: the common case costs one C call
        return text
    while True:  # NFKC can reveal an invisible character (U+FFA0 -> U+3164), removing one can allow composition
        canonical = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
        if canonical == text:
            return canonical
        text = canonical


def is_canonical_text(text: str) -> bool:
    return text.isascii() or (_INVISIBLE.search(text) is None and unicodedata.is_normalized("NFKC", text))


def canonical_problem(text: str) -> str:
    """Why ``text`` is not canonical, naming the first character at fault (for ``unicode = "reject"``)."""
    invisible = _INVISIBLE.search(text)
    if invisible is not None:
        return f"contains the invisible character U+{ord(invisible.group()):04X} at index {invisible.start()}"
    for index, char in enumerate(text):
        if unicodedata.normalize("NFKC", char) != char:
            return f"contains U+{ord(char):04X} at index {index}, which Unicode NFKC rewrites"
    return "is not in Unicode NFKC form"


def printable(text: str) -> str:
    """``text`` with each non-printable character (controls, line separators, invisible and bidi characters, lone
    surrogates) written as its Python escape (``\\x1b``, ``\\u202e``): what the CLI and the audit show of text
    nobody has checked, so it can neither drive a terminal nor pass for other text."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)
