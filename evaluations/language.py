"""A small, dependency-free language identifier (ISO 639-1) for the response-language instruction.

The writing system decides most languages; languages sharing a script (Latin, Cyrillic, Devanagari, Arabic)
are told apart by their most frequent function words.
"""

from __future__ import annotations

import re
from collections import Counter

_SCRIPTS: tuple[tuple[str, str], ...] = (
    ("ko", "\uac00-\ud7af\u1100-\u11ff"),
    ("ja", "\u3040-\u30ff"),
    ("zh", "\u4e00-\u9fff"),
    ("th", "\u0e00-\u0e7f"),
    ("bn", "\u0980-\u09ff"),
    ("pa", "\u0a00-\u0a7f"),
    ("gu", "\u0a80-\u0aff"),
    ("ta", "\u0b80-\u0bff"),
    ("te", "\u0c00-\u0c7f"),
    ("kn", "\u0c80-\u0cff"),
    ("ml", "\u0d00-\u0d7f"),
    ("he", "\u0590-\u05ff"),
    ("el", "\u0370-\u03ff"),
    ("devanagari", "\u0900-\u097f"),
    ("cyrillic", "\u0400-\u04ff"),
    ("arabic", "\u0600-\u06ff"),
    ("latin", "A-Za-z\u00c0-\u024f\u1e00-\u1eff"),
)

_FUNCTION_WORDS: dict[str, dict[str, str]] = {
    "devanagari": {
        "hi": "है हैं और के की का में से को यह पर भी नहीं था",
        "mr": "आहे आणि या हे व की ते आहेत करून त्या मध्ये होते",
        "ne": "छ र को मा हो पनि गर्न छन् यो भएको थियो लागि",
    },
    "cyrillic": {
        "ru": "и в не что на я с он как это по но из то для все",
        "bg": "и на е за от да се са в с не като по което които това",
        "uk": "і в не що на з та як це до але його від для",
    },
    "arabic": {
        "ar": "في من على أن إلى هذا التي الذي عن مع كان",
        "ur": "ہے کے کی اور میں سے کو یہ ہیں نہیں پر",
        "fa": "و در به از که این را با است برای",
    },
    "latin": {
        "en": "the and of to is in that it for you with are this be",
        "de": "der die und das ist nicht zu ein sie ich mit den auf",
        "fr": "le la les et des est un une que pas pour dans du",
        "es": "el la los las y que es en un una por con para del",
        "it": "il la di che è e un una per non sono con del della",
        "pt": "o a os as e que é um uma para com não do da em",
        "fi": "ja on ei se että hän oli ovat mutta kun tai myös",
        "vi": "và là của có không những các một được cho người này",
        "sw": "na ya wa kwa ni za la katika kuwa hii au cha",
        "nl": "de het een en van is dat niet op te zijn met",
    },
}


def detect_language(text: str) -> str:
    """ISO 639-1 code of ``text``'s language, or ``"unknown"``."""
    counts: Counter[str] = Counter()
    for name, ranges in _SCRIPTS:
        counts[name] = len(re.findall(f"[{ranges}]", text))
    if not counts or counts.most_common(1)[0][1] == 0:
        return "unknown"
    script = counts.most_common(1)[0][0]
    if script == "ja" or (script == "zh" and counts["ja"] > 0):
        return "ja"
    candidates = _FUNCTION_WORDS.get(script)
    if candidates is None:
        return script
    tokens = Counter(re.findall(r"\w+", text.lower()))
    scores = {code: sum(tokens[word] for word in words.split()) for code, words in candidates.items()}
    return max(scores, key=lambda code: scores[code])
