"""The offline pattern extractors, on their own (no database, no encoder)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from agentcore.memory import Event, ExtractedMemory, FactExtractor, PreferenceExtractor, Role


def _event(text: str) -> Event:
    return Event(id=1, actor_id="a", session_id="s", role=Role.USER, text=text, created_at=datetime.now(UTC))


def _texts(memories: Sequence[ExtractedMemory]) -> list[str]:
    return [memory.text for memory in memories]


def _unused_encoder(texts: Sequence[str]) -> np.ndarray:
    raise AssertionError("pattern extractors must not need the encoder")


def test_pattern_extractors_read_first_person_statements() -> None:
    facts = FactExtractor().extract(
        [_event("Hi, my name is Dana and I live in Porto. I work at a bakery.")], _unused_encoder
    )
    assert _texts(facts) == ["User's name is Dana.", "User lives in Porto.", "User works at a bakery."]
    prefs = PreferenceExtractor().extract(
        [_event("I really love spicy ramen, but I can't stand cilantro. My favorite season is autumn.")],
        _unused_encoder,
    )
    assert _texts(prefs) == [
        "User loves spicy ramen.",
        "User can't stand cilantro.",
        "User's favorite season is autumn.",
    ]
    assert [(m.subject, m.metadata["polarity"]) for m in prefs] == [
        ("spicy ramen", "positive"),
        ("cilantro", "negative"),
        ("favorite season", "positive"),
    ]
    assert PreferenceExtractor().extract([_event("The weather was nice and we walked home.")], _unused_encoder) == []


def test_dots_inside_an_email_or_number_stay_in_the_fact() -> None:
    facts = FactExtractor().extract(
        [_event("My email is amelia.hernandez4670@example.com. I live in St.Ives, and I work at a bakery.")],
        _unused_encoder,
    )
    assert _texts(facts) == [
        "User's email is amelia.hernandez4670@example.com.",
        "User lives in St.Ives.",
        "User works at a bakery.",
    ]
