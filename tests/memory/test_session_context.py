"""Session context in hybrid event search: neighbouring turns and busy sessions lift the evidence turn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcore.memory import MemoryStore, NewEvent, ScoredEvent, search
from agentcore.memory.search import SessionContext

pytestmark = pytest.mark.parametrize("make_store", ["sqlite", "postgresql"], indirect=True)

QUESTION = "What did Ben adopt from the animal shelter last weekend?"


def _conversation(store: MemoryStore) -> int:
    """Ben's answer shares no word with the question; the turns around it do, like three unrelated turns."""
    store.add_events(
        "ana",
        "s1",
        [
            NewEvent(role="user", text="Ana: Did you adopt anything from the animal shelter last weekend?"),
            NewEvent(role="user", text="Ben: Yes! A tiny grey kitten, we named her Miso."),
            NewEvent(role="user", text="Ana: A shelter kitten, lovely! Send me a photo."),
        ],
    )
    for index, text in enumerate(
        [
            "Ben: The shelter downtown is looking for volunteers.",
            "Ana: I read that adopting greyhounds saves lives.",
            "Ben: Last weekend we painted the fence.",
        ]
    ):
        store.add_events("ana", f"s{index + 2}", [NewEvent(role="user", text=text)])
    unrelated = [
        "Ana: my sister moves to Lisbon in June.",
        "Ben: the quarterly report is due on Friday.",
        "Ana: we should repaint the kitchen a pale green.",
        "Ben: my knee still hurts after the run.",
    ]
    for index, text in enumerate(unrelated):
        store.add_events("ana", f"u{index}", [NewEvent(role="user", text=text)])
    return store.list_events("ana", "s1")[1].id


def _place(hits: list[ScoredEvent], row_id: int) -> int:
    return [hit.event.id for hit in hits].index(row_id)


def test_the_turn_after_a_matching_question_is_lifted(store: MemoryStore) -> None:
    answer = _conversation(store)
    plain = store.search_events("ana", QUESTION, session_context=False)
    lifted = store.search_events("ana", QUESTION)
    assert _place(plain, answer) >= 3  # the three filler turns that match the question's words come first
    assert _place(lifted, answer) <= 1  # up with the question it answers
    for mode in ("fulltext", "vector"):  # the single rankers stay single
        assert store.search_events("ana", QUESTION, mode=mode) == store.search_events(
            "ana", QUESTION, mode=mode, session_context=False
        )


def test_neighbours_stay_inside_the_actor_session_and_expiry(store: MemoryStore) -> None:
    past = datetime.now(UTC) - timedelta(hours=1)
    store.add_events("ana", "s1", [NewEvent(role="user", text="Ana: where did you hide the zebracorn key?")])
    store.add_events("eve", "s1", [NewEvent(role="user", text="Eve: under the blue mat")])  # next id, same session name
    store.add_events("ana", "s1", [NewEvent(role="user", text="Ben: behind the clock", expires_at=past)])
    store.add_events("ana", "s2", [NewEvent(role="user", text="Ben: in the garden shed")])  # next id, other session
    kept = store.add_events("ana", "s1", [NewEvent(role="user", text="Ben: in the red teapot")])[0]
    hits = store.search_events("ana", "zebracorn key", session_id="s1")
    assert {hit.event.actor_id for hit in hits} == {"ana"}
    assert {hit.event.session_id for hit in hits} == {"s1"}
    assert [hit.event.text for hit in hits][-1] == kept.text  # the expired turn between them is skipped
    assert len(hits) == 2


def test_rerank_shares_scores_with_neighbours_and_sessions(make_store: object) -> None:
    context = SessionContext(neighbours={1: (2,), 5: ()}, sessions={1: "a", 2: "a", 5: "b"})
    scores = context.rerank({1: 1.0, 2: 0.1, 5: 0.8, 9: 0.7})
    neighbour = 0.1 + search.NEIGHBOUR_WEIGHT * 1.0
    assert scores[2] == pytest.approx(neighbour + search.SESSION_WEIGHT * (1.0 + neighbour))
    assert scores[1] == pytest.approx(1.0 + search.SESSION_WEIGHT * (1.0 + neighbour))
    assert scores[5] == pytest.approx(0.8 + search.SESSION_WEIGHT * 0.8)
    assert scores[9] == 0.7  # below the context depth: unchanged
