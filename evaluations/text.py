"""Small deterministic text analysis shared by evaluators: sentences, words, content words, numbers, entities."""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n{1,}")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
_ENTITY = re.compile(r"\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*")

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "he",
        "she",
        "they",
        "we",
        "you",
        "i",
        "me",
        "my",
        "our",
        "your",
        "their",
        "his",
        "her",
        "them",
        "us",
        "do",
        "does",
        "did",
        "done",
        "have",
        "has",
        "had",
        "not",
        "no",
        "so",
        "than",
        "too",
        "very",
        "can",
        "could",
        "will",
        "would",
        "should",
        "may",
        "might",
        "must",
        "shall",
        "into",
        "about",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "again",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "only",
        "own",
        "same",
        "just",
    ]
)


def sentences(text: str) -> list[str]:
    """Sentences (and lines) of ``text``, stripped, non-empty."""
    return [part.strip() for part in _SENTENCE.split(text) if part and part.strip()]


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry meaning (stop words removed)."""
    return {word.lower() for word in words(text) if word.lower() not in STOPWORDS}


def numbers(text: str) -> set[str]:
    """Numbers in ``text``, normalised (thousands separators removed, trailing ``.0`` dropped)."""
    found = set()
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        found.add(value)
    return found


def entities(text: str) -> set[str]:
    """Capitalised word runs not at a sentence start (a cheap proper-noun detector)."""
    found = set()
    for sentence in sentences(text):
        for match in _ENTITY.finditer(sentence):
            if match.start() > 0 or " " in match.group(0):
                found.add(match.group(0).lower())
    return found


def coverage(part: set[str], whole: set[str]) -> float:
    """Share of ``part`` found in ``whole`` (1.0 when ``part`` is empty: nothing unsupported)."""
    return 1.0 if not part else len(part & whole) / len(part)


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text``, ignoring case and spacing (numbers compared normalised)."""
    squash = " ".join(phrase.lower().split())
    return squash in " ".join(text.lower().split()) or bool(numbers(phrase) and numbers(phrase) <= numbers(text))
