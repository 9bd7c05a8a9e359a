"""A LangGraph ``BaseStore`` kept in agentcore memory: one actor's long-term records, with hybrid search.

Each item is one memory record: the namespace tuple is the record's path (``("prefs", "food")`` is
``/prefs/food``), the key its ``subject``, the value its metadata, and the value's JSON its text, which is
embedded so ``search(query=...)`` ranks by meaning and words. Records stay per actor, as everywhere in memory.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from agentcore.memory import MemoryStore
from agentcore.memory.models import MemoryRecord

_STRATEGY = "langgraph"


class MemoryBackedStore(BaseStore):
    """``BaseStore`` over a :class:`~agentcore.memory.MemoryStore`, for the records of ``actor_id``."""

    def __init__(self, memory: MemoryStore, *, actor_id: str) -> None:
        self.memory, self.actor_id = memory, actor_id

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            record = self._find(op.namespace, op.key)
            return _item(record) if record else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"unsupported store operation {type(op).__name__}")

    def _find(self, namespace: tuple[str, ...], key: str) -> MemoryRecord | None:
        found = self.memory.list_records(self.actor_id, namespace=_path(namespace), subject=key, limit=1)
        return found[0] if found else None

    def _put(self, op: PutOp) -> None:
        record = self._find(op.namespace, op.key)
        if op.value is None:
            if record:
                self.memory.delete_record(self.actor_id, record.id)
            return
        value = dict(op.value)
        text = json.dumps(value, sort_keys=True, default=str)
        if record:
            self.memory.update_record(self.actor_id, record.id, text=text, metadata=value)
        else:
            self.memory.add_record(
                self.actor_id, _path(op.namespace), text, strategy=_STRATEGY, subject=op.key, metadata=value
            )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        # whole labels: ("memories", "user_1") is the namespace /memories/user_1 and those under /memories/user_1/,
        # never /memories/user_10 (a store's namespace_prefix compares characters unless it ends with '/')
        prefix = _path(op.namespace_prefix) + ("/" if op.namespace_prefix else "")
        wanted = op.limit + op.offset
        if op.query:
            top_k = wanted * (4 if op.filter else 1)  # room for the filter, applied to the values afterwards
            hits = self.memory.retrieve(self.actor_id, op.query, namespace_prefix=prefix, top_k=top_k)
            scored: list[tuple[MemoryRecord, float | None]] = [(hit.record, hit.score) for hit in hits]
        else:
            scored = [(r, None) for r in self.memory.list_records(self.actor_id, namespace_prefix=prefix)]
        matching = [(r, s) for r, s in scored if r.subject is not None and _matches(r.metadata, op.filter)]
        return [_search_item(r, s) for r, s in matching[op.offset : wanted]]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {_labels(r.namespace) for r in self.memory.list_records(self.actor_id) if r.subject is not None}
        for condition in op.match_conditions or ():
            size = len(condition.path)
            part = (lambda ns, n=size: ns[:n]) if condition.match_type == "prefix" else (lambda ns, n=size: ns[-n:])
            found = {ns for ns in found if _wildcard_equal(part(ns), tuple(condition.path))}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]


def _path(namespace: tuple[str, ...]) -> str:
    return "/" + "/".join(quote(label, safe="") for label in namespace)


def _labels(path: str) -> tuple[str, ...]:
    return tuple(unquote(label) for label in path.strip("/").split("/") if label)


def _item(record: MemoryRecord) -> Item:
    return Item(value=dict(record.metadata), key=str(record.subject), namespace=_labels(record.namespace),
                created_at=record.created_at, updated_at=record.updated_at)  # fmt: skip


def _search_item(record: MemoryRecord, score: float | None) -> SearchItem:
    return SearchItem(_labels(record.namespace), str(record.subject), dict(record.metadata), record.created_at,
                      record.updated_at, score)  # fmt: skip


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return all(value.get(key) == expected for key, expected in (wanted or {}).items())


def _wildcard_equal(labels: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(labels) == len(pattern) and all(p == "*" or p == label for label, p in zip(labels, pattern, strict=True))
