"""A LangGraph ``BaseStore`` backed by agentcore memory (SQLite, the real encoder), used through LangGraph's API."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from agentcore.integrations.langgraph_store import MemoryBackedStore
from agentcore.memory import MemoryStore


@pytest.fixture
def memory(tmp_path: Path, accelerator: Any) -> Iterator[MemoryStore]:
    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.db'}", accelerator=accelerator)
    yield store
    store.close()


def test_put_get_update_delete_and_list_namespaces(memory: MemoryStore) -> None:
    store = MemoryBackedStore(memory, actor_id="alice")
    store.put(("prefs", "food"), "lunch", {"likes": "ramen", "spicy": True})
    store.put(("prefs", "travel"), "seat", {"likes": "aisle"})
    store.put(("prefs", "food"), "lunch", {"likes": "pho", "spicy": True})  # an update, not a second item
    item = store.get(("prefs", "food"), "lunch")
    assert item is not None and item.value == {"likes": "pho", "spicy": True} and item.namespace == ("prefs", "food")
    assert store.get(("prefs", "food"), "dinner") is None
    assert store.list_namespaces(prefix=("prefs",)) == [("prefs", "food"), ("prefs", "travel")]
    assert store.list_namespaces(suffix=("travel",)) == [("prefs", "travel")]
    assert store.list_namespaces(max_depth=1) == [("prefs",)]
    assert [i.key for i in store.search(("prefs",), filter={"spicy": True})] == ["lunch"]
    store.delete(("prefs", "food"), "lunch")
    assert store.get(("prefs", "food"), "lunch") is None
    assert [r.text for r in memory.list_records("alice")] == ['{"likes": "aisle"}']  # it is agentcore memory
    assert MemoryBackedStore(memory, actor_id="bob").search(("prefs",)) == []  # records stay per actor


def test_semantic_search_and_a_graph_node_using_the_store(memory: MemoryStore) -> None:
    store = MemoryBackedStore(memory, actor_id="alice")
    store.put(("notes",), "n1", {"text": "the customer prefers email over phone calls"})
    store.put(("notes",), "n2", {"text": "quarterly revenue grew by ten percent"})
    (best, *_) = store.search(("notes",), query="how does the customer want to be contacted?")
    assert best.key == "n1" and best.score is not None

    async def remember(state: MessagesState, *, store: BaseStore) -> dict[str, Any]:
        await store.aput(("notes",), "n3", {"text": state["messages"][-1].content})  # through abatch
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    graph = builder.compile(store=store)
    asyncio.run(graph.ainvoke({"messages": [("user", "call me after five")]}))
    item = store.get(("notes",), "n3")
    assert item is not None and item.value == {"text": "call me after five"}


def test_a_namespace_prefix_is_one_of_labels_not_of_characters(memory: MemoryStore) -> None:
    """LangGraph keeps users apart by namespace (``("memories", user_id)``) in one store: ``("memories", "user_1")``
    must not reach ``("memories", "user_10")``, as LangGraph's own stores do not."""
    store = MemoryBackedStore(memory, actor_id="app")
    store.put(("memories", "user_1"), "hint", {"text": "my password hint is quokka"})
    store.put(("memories", "user_1", "work"), "desk", {"text": "my desk is by the window"})
    store.put(("memories", "user_10"), "hint", {"text": "my password hint is zebracorn"})
    store.put(("memories", "user_1%"), "hint", {"text": "my password hint is wombat"})
    own = [(("memories", "user_1"), "hint"), (("memories", "user_1", "work"), "desk")]
    assert sorted((i.namespace, i.key) for i in store.search(("memories", "user_1"))) == own
    found = store.search(("memories", "user_1"), query="what is the password hint? zebracorn wombat")
    assert sorted((i.namespace, i.key) for i in found) == own
    assert [i.key for i in store.search(("memories", "user_1", "work"))] == ["desk"]
    assert len(store.search(("memories",))) == 4 and len(store.search(())) == 4
