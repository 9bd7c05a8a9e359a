"""Offline extractors: turn conversation events into candidate long-term memories without an LLM.

They are deliberately simple and predictable: first-person statement patterns for facts and
preferences, and an extractive summary that keeps the sentences closest to the session's embedding
centroid. They miss paraphrases, third-person facts, negations inside clauses and anything implied;
an application that needs more plugs its own :class:`Extractor` (for example one that calls an LLM).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentcore.memory.models import Event

Encoder = Callable[[Sequence[str]], np.ndarray]
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# The object of a statement runs to the end of its clause: punctuation or a conjunction starting a new one.
# A clause ends at a conjunction or at punctuation followed by a space or the end; a dot inside a token (an email
# address, a domain, "3.5") belongs to the clause.
_CLAUSE_END = (
    r"(?P<object>(?:[^.!?;,]|[.!?](?=\w))+?)"
    r"(?=\s+(?:and|but|because|although|since|so|while|when)\s|[.!?;,](?=\s|$)|$)"
)


class ExtractedMemory(BaseModel):
    """A candidate record. Candidates sharing a ``subject`` replace each other (newest wins)."""

    model_config = ConfigDict(frozen=True)

    text: str
    subject: str | None = None
    source_event_ids: list[int] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Extractor(Protocol):
    """Turns a session's events (already filtered to the strategy's roles) into candidate memories."""

    def extract(self, events: Sequence[Event], encode: Encoder) -> list[ExtractedMemory]: ...


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE.split(text) if len(part.strip()) > 2]


def _clean(value: str) -> str:
    return re.sub(r"\s+", " ", value).strip(" \"'")


class _PatternExtractor:
    """Applies (regex, builder) rules to every sentence of every event: one candidate per match."""

    rules: Sequence[tuple[re.Pattern[str], Callable[[re.Match[str]], ExtractedMemory | None]]] = ()

    def extract(self, events: Sequence[Event], encode: Encoder) -> list[ExtractedMemory]:
        found: list[ExtractedMemory] = []
        for event in events:
            for sentence in sentences(event.text):
                for pattern, build in self.rules:
                    for match in pattern.finditer(sentence):
                        memory = build(match)
                        if memory is not None:
                            found.append(memory.model_copy(update={"source_event_ids": [event.id]}))
        return found


_POSITIVE = {"love": "loves", "like": "likes", "enjoy": "enjoys", "prefer": "prefers", "adore": "adores"}
_NEGATIVE = {"hate": "hates", "dislike": "dislikes", "detest": "detests", "can't stand": "can't stand",
             "cannot stand": "can't stand", "don't like": "doesn't like", "do not like": "doesn't like"}  # fmt: skip


def _preference(match: re.Match[str]) -> ExtractedMemory | None:
    verb = match["verb"].lower()
    thing = _clean(re.split(r"\s+(?:to|over|more than)\s+", match["object"])[0])
    if not thing or len(thing) > 80 or thing.lower() in {"it", "that", "this", "them", "you"}:
        return None
    polarity = "negative" if verb in _NEGATIVE else "positive"
    phrase = _NEGATIVE.get(verb) or _POSITIVE[verb]
    return ExtractedMemory(
        text=f"User {phrase} {thing}.", subject=thing.lower(), metadata={"polarity": polarity, "object": thing}
    )


def _favourite(match: re.Match[str]) -> ExtractedMemory | None:
    category, value = _clean(match["category"]).lower(), _clean(match["object"])
    if not value:
        return None
    return ExtractedMemory(
        text=f"User's favorite {category} is {value}.",
        subject=f"favorite {category}",
        metadata={"polarity": "positive", "object": value},
    )


class PreferenceExtractor(_PatternExtractor):
    """First-person likes and dislikes: "I love X", "I can't stand X", "my favorite X is Y"."""

    rules = (
        (re.compile(r"\bmy (?:favou?rite|preferred) (?P<category>[\w ]{2,30}?) (?:is|are) " + _CLAUSE_END, re.I),
         _favourite),
        (re.compile(r"\bI (?:really |absolutely |just |truly |also )?(?P<verb>" + "|".join(_POSITIVE | _NEGATIVE)
                    + r")\s+" + _CLAUSE_END, re.I), _preference),
    )  # fmt: skip


_RELATIONS = "name|job|occupation|profession|birthday|hometown|wife|husband|partner|girlfriend|boyfriend|son|daughter|dog|cat|pet|email|phone number|address"  # noqa: E501
_FACT_TEMPLATES: dict[str, tuple[str, str]] = {
    "live": ("residence", "User lives in {0}."),
    "work": ("work", "User works {1} {0}."),
    "born": ("origin", "User was born in {0}."),
    "from": ("origin", "User is from {0}."),
}


def _relation(match: re.Match[str]) -> ExtractedMemory | None:
    relation, value = match["relation"].lower(), _clean(match["object"])
    return ExtractedMemory(text=f"User's {relation} is {value}.", subject=relation) if value else None


def _identity(match: re.Match[str]) -> ExtractedMemory | None:
    value = _clean(match["object"])
    if not value or len(value.split()) > 6:
        return None
    return ExtractedMemory(text=f"User is {match['article'].lower()} {value}.")


def _place(kind: str) -> Callable[[re.Match[str]], ExtractedMemory | None]:
    subject, template = _FACT_TEMPLATES[kind]

    def build(match: re.Match[str]) -> ExtractedMemory | None:
        value = _clean(match["object"])
        preposition = (match.groupdict().get("prep") or "").lower()
        return ExtractedMemory(text=template.format(value, preposition), subject=subject) if value else None

    return build


class FactExtractor(_PatternExtractor):
    """First-person facts: "my dog is Rex", "I live in Lisbon", "I work at Acme", "I'm a nurse"."""

    rules = (
        (re.compile(r"\bmy (?P<relation>" + _RELATIONS + r")(?:'s| is) " + _CLAUSE_END, re.I), _relation),
        (re.compile(r"\bI(?: currently| now)? live in " + _CLAUSE_END, re.I), _place("live")),
        (re.compile(r"\bI(?: currently| now)? work (?P<prep>as|at|for) " + _CLAUSE_END, re.I), _place("work")),
        (re.compile(r"\bI was born in " + _CLAUSE_END, re.I), _place("born")),
        (re.compile(r"\bI(?:'m| am) (?:originally )?from " + _CLAUSE_END, re.I), _place("from")),
        (re.compile(r"\bI(?:'m| am) (?P<article>a|an) " + _CLAUSE_END, re.I), _identity),
    )


class SummaryExtractor:
    """Extractive session summary: the ``max_sentences`` sentences nearest the session's centroid.

    Centrality favours what the session keeps returning to; it cannot paraphrase, resolve pronouns or
    notice a single important aside.
    """

    def __init__(self, max_sentences: int = 5) -> None:
        if max_sentences < 1:
            raise ValueError("max_sentences must be at least 1")
        self.max_sentences = max_sentences

    def extract(self, events: Sequence[Event], encode: Encoder) -> list[ExtractedMemory]:
        units = [(event.id, sentence) for event in events for sentence in sentences(event.text)]
        if not units:
            return []
        vectors = encode([sentence for _, sentence in units])
        centroid = vectors.mean(axis=0)
        keep = sorted(np.argsort(-(vectors @ centroid), kind="stable")[: self.max_sentences])
        return [
            ExtractedMemory(
                text=" ".join(units[i][1] for i in keep),
                subject="session summary",
                source_event_ids=sorted({units[i][0] for i in keep}),
            )
        ]
