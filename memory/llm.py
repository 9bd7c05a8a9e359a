"""LLM strategies: facts, preferences and session summaries extracted, then consolidated, by a configured model.

Optional; the offline extractors stay the default. The model is reached only through ``agentcore.accel.llm`` with
the same :class:`~agentcore.accel.llm.LLMConfig` the evaluations' LLM judges use (OpenAI-compatible, Anthropic
Messages, Bedrock Converse), and each completion is a ``kind="llm"`` receipt in the store's ledger, charged to the
actor. Answers are JSON checked against a schema; one that is not is asked for again (``retries`` times), then
:class:`MemoryExtractionError` is raised before the strategy writes anything: the events stay, and extraction can
simply be run again (what was already consolidated comes back as ``none``).

Consolidation follows AgentCore Memory and mem0: for each new memory the model sees the most similar live records of
the same strategy and answers ``add``, ``update`` (a merged text), ``delete`` (the record is contradicted; the new
memory replaces it) or ``none`` (already known). Updates and deletions supersede: the old record leaves retrieval but
stays in ``record_history`` and under ``include_superseded=True``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentcore.accel.llm import LLMConfig, LLMError, LLMProvider, Message, MeteredLLM, create_provider, json_object
from agentcore.memory.errors import MemoryExtractionError
from agentcore.memory.extractors import Encoder, ExtractedMemory
from agentcore.memory.models import Event, MemoryRecord
from agentcore.memory.rows import NewRecord

if TYPE_CHECKING:
    from agentcore.accel.ledger import Ledger
    from agentcore.memory.store import MemoryStore
    from agentcore.memory.strategies import MemoryStrategy

Kind = Literal["semantic", "user_preference", "summary"]
Answer = TypeVar("Answer", bound=BaseModel)
CANDIDATES = 5  # similar live records shown to the model per new memory


class _Schema(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Fact(_Schema):
    text: str = Field(min_length=1)
    subject: str | None = None
    event_ids: list[int] = Field(min_length=1)


class _Preference(_Fact):
    polarity: Literal["positive", "negative"] = "positive"
    categories: list[str] = Field(default_factory=list)
    context: str | None = None


class _Facts(_Schema):
    memories: list[_Fact]


class _Preferences(_Schema):
    memories: list[_Preference]


class _Summary(_Schema):
    summary: str
    event_ids: list[int]


class _Decision(_Schema):
    memory: int
    action: Literal["add", "update", "delete", "none"]
    record_id: int | None = None
    text: str | None = None


class _Decisions(_Schema):
    decisions: list[_Decision]


_SUBJECT = '"subject": a short lower-case key for what it is about (e.g. "residence", "dog", "coffee")'
_INSTRUCTIONS: dict[str, tuple[str, type[_Schema]]] = {
    "semantic": (
        "Extract standalone facts about the user and their life stated in this conversation (who they are, where "
        "they live and work, people, pets, plans, events), one fact per item, written about 'User'. Skip "
        'greetings and questions. Answer only with JSON: {"memories": [{"text": "User ...", '
        f'{_SUBJECT}, "event_ids": [ids of the turns it comes from]}}]}}.',
        _Facts,
    ),
    "user_preference": (
        "Extract the user's preferences (likes, dislikes, habits, wishes about how to be helped) stated or "
        "clearly implied in this conversation, written about 'User'. Answer only with JSON: {\"memories\": "
        f'[{{"text": "User ...", {_SUBJECT}, "polarity": "positive" or "negative", "categories": [...], '
        '"context": "why or when", "event_ids": [ids of the turns it comes from]}]}.',
        _Preferences,
    ),
    "summary": (
        "Summarise this session in at most five sentences: what the user wanted, what was decided, what is "
        'pending. Answer only with JSON: {"summary": "...", "event_ids": [ids of the turns it draws on]}.',
        _Summary,
    ),
}
_CONSOLIDATE = (
    "You maintain a user's long-term memory. For each NEW memory decide against the EXISTING records: 'add' (new "
    "information), 'update' (it refines an existing record: give the merged text), 'delete' (it contradicts an "
    "existing record, which is no longer true) or 'none' (already known). Answer only with JSON: "
    '{"decisions": [{"memory": index of the new memory, "action": "add" | "update" | "delete" | "none", '
    '"record_id": id of the existing record (not for add), "text": merged text (update only)}]}, one decision per '
    "new memory."
)


def _ask(
    llm: MeteredLLM,
    messages: list[Message],
    schema: type[Answer],
    check: Callable[[Answer], str | None],
    *,
    retries: int,
    user: str,
) -> Answer:
    """The model's answer as ``schema``, asking again with the problem named when it is not usable."""
    problem = "no answer"
    for _ in range(retries + 1):
        try:
            completion = llm.complete(messages, json_output=True, user=user)
        except LLMError as error:
            raise MemoryExtractionError(f"{error}; the events are kept, run extract again") from error
        answer = json_object(completion.text)
        if answer is None:
            problem = "the answer is not a JSON object"
        else:
            try:
                parsed = schema.model_validate(answer)
            except ValidationError as error:
                problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:5])
            else:
                found = check(parsed)
                if found is None:
                    return parsed
                problem = found
        messages = [
            *messages,
            Message("assistant", completion.text),
            Message("user", f"That answer cannot be used ({problem}). Answer again with only the JSON object."),
        ]
    raise MemoryExtractionError(
        f"{llm.model} gave no usable answer in {retries + 1} tries (last: {problem}); nothing was written, the "
        "events are kept, run extract again"
    )


def _unknown_events(event_ids: set[int]) -> Callable[[_Schema], str | None]:
    def check(answer: _Schema) -> str | None:
        if isinstance(answer, _Summary):
            cited = set(answer.event_ids)
        else:
            cited = {i for memory in getattr(answer, "memories", []) for i in memory.event_ids}
        unknown = sorted(cited - event_ids)
        return f"event_ids {unknown} are not turns of this conversation" if unknown else None

    return check


class LLMExtractor:
    """An :class:`~agentcore.memory.extractors.Extractor` asking ``llm`` for one strategy's memories."""

    def __init__(self, llm: MeteredLLM, kind: Kind, *, retries: int = 2) -> None:
        if kind not in _INSTRUCTIONS:
            raise ValueError(f"kind must be one of {', '.join(_INSTRUCTIONS)}, got {kind!r}")
        self.llm, self.kind, self.retries = llm, kind, retries

    def extract(self, events: Sequence[Event], encode: Encoder) -> list[ExtractedMemory]:
        if not events:
            return []
        instructions, schema = _INSTRUCTIONS[self.kind]
        transcript = "\n".join(f"[{event.id}] {event.role.value}: {event.text}" for event in events)
        messages = [Message("system", instructions), Message("user", f"Conversation:\n{transcript}")]
        check = _unknown_events({event.id for event in events})
        answer = _ask(self.llm, messages, schema, check, retries=self.retries, user=events[0].actor_id)
        if isinstance(answer, _Summary):
            return [ExtractedMemory(text=answer.summary, subject="session summary", source_event_ids=answer.event_ids)]
        return [_memory(item) for item in getattr(answer, "memories", [])]


def _memory(item: _Fact) -> ExtractedMemory:
    metadata: dict[str, Any] = {}
    if isinstance(item, _Preference):
        metadata = {"polarity": item.polarity, "categories": item.categories}
        if item.context:
            metadata["context"] = item.context
    subject = item.subject.strip().lower()[:255] if item.subject and item.subject.strip() else None
    return ExtractedMemory(
        text=item.text, subject=subject, source_event_ids=sorted(set(item.event_ids)), metadata=metadata
    )


class LLMConsolidator:
    """A :class:`~agentcore.memory.strategies.Consolidator` that lets ``llm`` decide add/update/delete/none."""

    def __init__(self, llm: MeteredLLM, *, candidates: int = CANDIDATES, retries: int = 2) -> None:
        self.llm, self.candidates, self.retries = llm, candidates, retries

    def __call__(
        self, store: MemoryStore, actor_id: str, namespace: str, strategy: str, memories: Sequence[ExtractedMemory]
    ) -> list[MemoryRecord]:
        if not memories:
            return []
        vectors = store.embed(actor_id, [memory.text for memory in memories])
        existing = self._similar(store, actor_id, namespace, strategy, memories, vectors)
        if existing:
            decisions = self._decide(actor_id, memories, existing)
        else:
            decisions = [_Decision(memory=index, action="add") for index in range(len(memories))]
        return [
            self._apply(store, actor_id, namespace, strategy, memories[d.memory], vectors[d.memory], d, existing)
            for d in sorted(decisions, key=lambda decision: decision.memory)
        ]

    def _similar(
        self,
        store: MemoryStore,
        actor_id: str,
        namespace: str,
        strategy: str,
        memories: Sequence[ExtractedMemory],
        vectors: np.ndarray,
    ) -> dict[int, MemoryRecord]:
        found: dict[int, MemoryRecord] = {}
        for memory, vector in zip(memories, vectors, strict=True):
            hits = store.retrieve(
                actor_id, memory.text, namespace=namespace, top_k=self.candidates, mode="vector", query_embedding=vector
            )
            found.update({hit.record.id: hit.record for hit in hits if hit.record.strategy == strategy})
        return found

    def _decide(
        self, actor_id: str, memories: Sequence[ExtractedMemory], existing: dict[int, MemoryRecord]
    ) -> list[_Decision]:
        listing = {
            "existing": [{"record_id": record.id, "text": record.text} for record in existing.values()],
            "new": [{"memory": index, "text": memory.text} for index, memory in enumerate(memories)],
        }
        messages = [Message("system", _CONSOLIDATE), Message("user", json.dumps(listing, ensure_ascii=False))]

        def check(answer: _Decisions) -> str | None:
            indexes = sorted(decision.memory for decision in answer.decisions)
            if indexes != list(range(len(memories))):
                return f"give exactly one decision for each new memory 0..{len(memories) - 1}"
            targets = [d.record_id for d in answer.decisions if d.action != "add"]
            if any(target not in existing for target in targets):
                return f"record_id must be one of the existing records {sorted(existing)}"
            replaced = [d.record_id for d in answer.decisions if d.action in ("update", "delete")]
            if len(replaced) != len(set(replaced)):
                return "each existing record can be updated or deleted once"
            if any(d.action == "update" and not (d.text or "").strip() for d in answer.decisions):
                return "an update needs the merged text"
            return None

        return _ask(self.llm, messages, _Decisions, check, retries=self.retries, user=actor_id).decisions

    @staticmethod
    def _apply(
        store: MemoryStore,
        actor_id: str,
        namespace: str,
        strategy: str,
        memory: ExtractedMemory,
        vector: np.ndarray,
        decision: _Decision,
        existing: dict[int, MemoryRecord],
    ) -> MemoryRecord:
        old = existing.get(decision.record_id) if decision.record_id is not None else None
        if decision.action == "none" and old is not None:
            sources = sorted(set(old.source_event_ids) | set(memory.source_event_ids))
            return store.update_record(actor_id, old.id, source_event_ids=sources)
        text = decision.text if decision.action == "update" and decision.text else memory.text
        sources = memory.source_event_ids
        if decision.action == "update" and old is not None:
            sources = sorted(set(old.source_event_ids) | set(sources))
        new = NewRecord(
            namespace=namespace,
            text=text,
            strategy=strategy,
            subject=memory.subject or (old.subject if old is not None else None),
            metadata={**memory.metadata, "consolidation": decision.action},
            source_event_ids=sources,
        )
        new_id = store.add_records(actor_id, [new], embeddings=vector[None, :] if text == memory.text else None)[0]
        if old is not None:
            store.supersede_record(actor_id, old.id, new_id)
        return store.get_record(actor_id, new_id)


def llm_strategies(
    store: MemoryStore,
    config: LLMConfig,
    *,
    provider: LLMProvider | None = None,
    retries: int = 2,
    ledger: Ledger | Literal["default"] | None = "default",
) -> tuple[MemoryStrategy, ...]:
    """The default strategies (same names, namespaces, roles), extracted and consolidated by the configured model.

    Usage is charged to ``store``'s tenant and the actor, in ``ledger`` (default: the store's accelerator's, the
    one its embeddings are charged to; None records nothing). ``provider`` reuses a client (e.g. a boto3 one).
    """
    from agentcore.memory.strategies import DEFAULT_STRATEGIES

    if ledger == "default":
        ledger = store.accelerator.ledger
    llm = MeteredLLM(provider or create_provider(config), config, ledger=ledger, tenant=store.tenant, agent=None)
    consolidator = LLMConsolidator(llm, retries=retries)
    kinds: dict[str, Kind] = {"semantic": "semantic", "user_preference": "user_preference", "summary": "summary"}
    return tuple(
        replace(strategy, extractor=LLMExtractor(llm, kinds[strategy.name], retries=retries), consolidator=consolidator)
        for strategy in DEFAULT_STRATEGIES
    )
