"""What the agent remembers about a customer between conversations, on :class:`MemoryStore`.

Preferences (the payment method a customer chose, their new address) are long-term records, one live record per
kind: a newer choice supersedes the older one, so recall returns the latest and the history stays auditable.
Every turn is also an event, the short-term memory of the conversation, and each conversation is summarised by
the memory module's own summary strategy.
"""

from __future__ import annotations

from typing import Any

from agentcore.memory import DEFAULT_STRATEGIES, MemoryStore

SUMMARY = [strategy for strategy in DEFAULT_STRATEGIES if strategy.name == "summary"]


def preferences(customer: str) -> str:
    return f"/customers/{customer}/preferences"


class CustomerMemory:
    """Per-customer preferences and conversation events; every query and record is embedded through accel."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.preferences = 0
        self.summaries = 0
        self.recalled: list[dict[str, Any]] = []

    def remember(self, customer: str, kind: str, value: Any, text: str, session_id: str) -> bool:
        """Keep ``value`` as the customer's current ``kind`` preference; False when it already was."""
        records = self.store.list_records(customer, namespace=preferences(customer), subject=kind)
        if any(r.metadata.get("value") == value for r in records):
            return False
        record = self.store.add_record(
            customer, preferences(customer), text, strategy="preference", subject=kind,
            metadata={"kind": kind, "value": value, "session": session_id},
        )  # fmt: skip
        self.preferences += 1
        for old in records:
            self.store.supersede_record(customer, old.id, record.id)
        return True

    def recall(self, customer: str, kind: str, query: str) -> Any:
        """The customer's current ``kind`` preference most relevant to ``query``, or None if there is none."""
        hits = self.store.retrieve(customer, query, namespace=preferences(customer), top_k=1, filters={"kind": kind})
        if not hits:
            return None
        metadata = hits[0].record.metadata
        self.recalled.append({"customer": customer, "kind": kind, "value": metadata.get("value"),
                              "remembered_in": metadata.get("session")})  # fmt: skip
        return metadata.get("value")

    def log(self, customer: str, session_id: str, turns: list[tuple[str, str]]) -> None:
        """Store a conversation's turns as events, then its summary record (the library's summary strategy)."""
        for role, text in turns:
            self.store.add_event(customer, session_id, role, text)
        self.summaries += len(self.store.extract(customer, session_id, strategies=SUMMARY))
