"""LLM strategies against real protocol peers (tests/conftest.py ``serve``): extraction, consolidation with history,
metering into the ledger, bounded retries, and failures that write nothing and keep the events."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from sqlmodel import Session, select

from agentcore.accel.ledger import Ledger, ReceiptRow
from agentcore.accel.llm import BedrockConverse, LLMConfig
from agentcore.memory import MemoryExtractionError, MemoryStore, llm_strategies

Answers = dict[str, Callable[[dict[str, Any]], str]]


class ScriptedModel:
    """Answers each request by what it asks for (the strategy's instructions or the consolidation prompt)."""

    KINDS: ClassVar[dict[str, str]] = {
        "Extract standalone facts": "semantic",
        "Extract the user's preferences": "user_preference",
        "Summarise this session": "summary",
        "You maintain a user's long-term memory": "consolidate",
    }

    def __init__(self, answers: Answers) -> None:
        self.answers, self.asked = answers, []  # type: ignore[var-annotated]

    def __call__(self, body: dict[str, Any]) -> str:
        system = body["system"] if "system" in body else body["messages"][0]["content"]
        kind = next(kind for prefix, kind in self.KINDS.items() if system.startswith(prefix))
        self.asked.append(kind)
        return self.answers[kind](body)


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def _ids(body: dict[str, Any]) -> list[int]:
    """The event ids shown in the transcript (the first user message): ``[12] user: ...``."""
    transcript = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return [int(line.split("]")[0][1:]) for line in transcript.splitlines() if line.startswith("[")]


def _memories(*items: tuple[str, str]) -> Callable[[dict[str, Any]], str]:
    return lambda body: json.dumps(
        {"memories": [{"text": t, "subject": s, "event_ids": _ids(body)[:1]} for t, s in items]}
    )


def _summary(body: dict[str, Any]) -> str:
    text = "The user talked about where they live and what they drink."
    return json.dumps({"summary": text, "event_ids": _ids(body)})


def _decide(action: str, about: str, text: str | None = None) -> Callable[[dict[str, Any]], str]:
    """One decision for new memory 0 against the existing record whose text mentions ``about``."""

    def answer(body: dict[str, Any]) -> str:
        listing = json.loads(_prompt(body))
        target = next(r["record_id"] for r in listing["existing"] if about in r["text"])
        return json.dumps({"decisions": [{"memory": 0, "action": action, "record_id": target, "text": text}]})

    return answer


def _config(url: str, **extra: Any) -> LLMConfig:
    return LLMConfig(model="mem-1", base_url=url + "/v1", usd_per_1k_input_tokens=1.0, **extra)


def test_llm_strategies_extract_consolidate_with_history_and_charge_the_ledger(
    store: MemoryStore, serve: Any, tmp_path: Path
) -> None:
    model = ScriptedModel(
        {
            "semantic": _memories(("User lives in Lisbon.", "Residence")),
            "user_preference": _memories(("User loves black coffee.", "coffee")),
            "summary": _summary,
        }
    )
    server = serve(model)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    strategies = llm_strategies(store, _config(server.url), ledger=ledger)
    store.add_event("alice", "s1", "user", "I live in Lisbon and I love black coffee.")
    store.add_event("alice", "s1", "assistant", "Lisbon and coffee, noted.")
    first = store.extract("alice", "s1", strategies)
    assert {(r.namespace, r.text) for r in first} == {
        ("/users/alice/facts", "User lives in Lisbon."),
        ("/users/alice/preferences", "User loves black coffee."),
        ("/users/alice/sessions/s1/summary", "The user talked about where they live and what they drink."),
    }
    assert model.asked == ["semantic", "user_preference", "summary"]  # nothing to consolidate against yet
    lisbon = store.list_records("alice", namespace="/users/alice/facts")[0]
    assert lisbon.subject == "residence" and lisbon.strategy == "semantic"
    path, _, body = server.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "mem-1"
    assert body["response_format"] == {"type": "json_object"}

    model.answers.update(
        semantic=_memories(("User lives in Porto.", "residence")),
        user_preference=_memories(("User now drinks only tea.", "coffee")),
        consolidate=lambda body: (
            _decide("delete", "Lisbon")(body)
            if "Porto" in _prompt(body)
            else _decide("update", "coffee", "User used to love black coffee and now drinks only tea.")(body)
        ),
    )
    store.add_event("alice", "s2", "user", "I moved to Porto last month, and I drink only tea these days.")
    store.extract("alice", "s2", strategies)
    facts = store.list_records("alice", namespace="/users/alice/facts")
    assert [r.text for r in facts] == ["User lives in Porto."]  # the contradicted record is not current
    history = [r.text for r in store.record_history("alice", facts[0].id)]
    assert history == ["User lives in Lisbon.", "User lives in Porto."]
    assert facts[0].metadata["consolidation"] == "delete"
    (tea,) = store.list_records("alice", namespace="/users/alice/preferences")
    assert tea.text == "User used to love black coffee and now drinks only tea."
    assert len(tea.source_event_ids) == 2  # the update keeps both sessions' evidence
    top = store.retrieve("alice", "which city does the user live in", namespace="/users/alice/facts", top_k=2)
    assert [hit.record.text for hit in top] == ["User lives in Porto."]
    both = store.retrieve("alice", "city", namespace="/users/alice/facts", include_superseded=True)
    assert {hit.record.text for hit in both} == {"User lives in Porto.", "User lives in Lisbon."}

    with Session(ledger.engine) as session:
        ledger.flush()
        receipts = session.exec(select(ReceiptRow)).all()
    calls = len(server.requests)
    assert calls == 3 + 3 + 2  # s1: three extractions; s2: three, and two consolidations (a new summary has none)
    assert len(receipts) == calls and {(r.kind, r.user, r.tenant) for r in receipts} == {("llm", "alice", "default")}
    assert {(r.input_tokens, r.output_tokens, r.model) for r in receipts} == {(120, 12, "llm:mem-1")}
    assert ledger.spend(kind="llm", user="alice").usd == pytest.approx(calls * 0.12)


def test_unusable_answers_are_retried_with_the_problem_named(store: MemoryStore, serve: Any) -> None:
    replies = iter(
        [
            "Sure! The user lives in Lisbon.",  # not JSON
            json.dumps({"memories": [{"text": "User lives in Lisbon.", "event_ids": [999]}]}),  # unknown event
            json.dumps({"memories": [{"text": "User lives in Lisbon.", "subject": "residence", "event_ids": []}]}),
        ]
    )
    server = serve(lambda body: next(replies, None) or _memories(("User lives in Lisbon.", "residence"))(body))
    (semantic, *_) = llm_strategies(store, _config(server.url), retries=3, ledger=None)
    event = store.add_event("alice", "s1", "user", "I live in Lisbon.")
    (record,) = store.extract("alice", "s1", [semantic])
    assert record.text == "User lives in Lisbon." and record.source_event_ids == [event.id]
    corrections = [body["messages"][-1]["content"] for _, _, body in server.requests[1:]]
    assert len(server.requests) == 4 and all(c.startswith("That answer cannot be used") for c in corrections)
    assert "not a JSON object" in corrections[0] and "[999] are not turns" in corrections[1]
    assert "event_ids" in corrections[2] and server.requests[1][2]["messages"][-2]["role"] == "assistant"


@pytest.mark.parametrize("failure", ["never json", "http 500", "unreachable"])
def test_a_failed_llm_writes_nothing_keeps_the_events_and_can_be_retried(
    store: MemoryStore, serve: Any, failure: str
) -> None:
    broken = {"never json": lambda body: "I'd rather chat.", "http 500": lambda body: (500, {"error": "overloaded"})}
    healthy: Answers = {
        "semantic": _memories(("User lives in Lisbon.", "residence")),
        "user_preference": _memories(("User loves black coffee.", "coffee")),
        "summary": _summary,
    }
    model = ScriptedModel({**healthy, "summary": broken.get(failure, _summary)})  # the LAST strategy fails
    url = "http://127.0.0.1:9" if failure == "unreachable" else serve(model).url
    store.add_event("alice", "s1", "user", "I live in Lisbon and I love black coffee.")
    with pytest.raises(MemoryExtractionError, match="run extract again"):
        store.extract("alice", "s1", llm_strategies(store, _config(url, timeout_s=5), retries=1, ledger=None))
    assert store.stats().records == 0  # the strategies that had answered wrote nothing either
    assert [e.text for e in store.list_events("alice", "s1")] == ["I live in Lisbon and I love black coffee."]
    again = serve(ScriptedModel(healthy))
    assert len(store.extract("alice", "s1", llm_strategies(store, _config(again.url), ledger=None))) == 3


def test_consolidation_cannot_touch_records_it_was_not_shown(store: MemoryStore, serve: Any) -> None:
    other = store.add_record("bob", "/users/bob/facts", "Bob lives in Oslo.", strategy="semantic")
    mine = store.add_record("alice", "/users/alice/facts", "User lives in Lisbon.", strategy="semantic")
    hostile = json.dumps({"decisions": [{"memory": 0, "action": "delete", "record_id": other.id}]})
    porto = _memories(("User lives in Porto.", "residence"))
    model = ScriptedModel({"semantic": porto, "consolidate": lambda body: hostile})
    server = serve(model)
    (semantic, *_) = llm_strategies(store, _config(server.url), retries=1, ledger=None)
    store.add_event("alice", "s1", "user", "I live in Porto now.")
    with pytest.raises(MemoryExtractionError, match=rf"record_id must be one of the existing records \[{mine.id}\]"):
        store.extract("alice", "s1", [semantic])
    assert [r.text for r in store.list_records("alice")] == ["User lives in Lisbon."]
    assert store.get_record("bob", other.id).superseded_by is None


def test_re_extracting_a_session_the_model_already_knows_adds_nothing(store: MemoryStore, serve: Any) -> None:
    model = ScriptedModel({"semantic": _memories(("User lives in Lisbon.", "residence"))})
    (semantic, *_) = llm_strategies(store, _config(serve(model).url), ledger=None)
    store.add_event("alice", "s1", "user", "I live in Lisbon.")
    (first,) = store.extract("alice", "s1", [semantic])
    model.answers["consolidate"] = _decide("none", "Lisbon")
    (again,) = store.extract("alice", "s1", [semantic])
    assert again.id == first.id and store.stats().records == 1 and model.asked[-1] == "consolidate"


def test_anthropic_messages_provider(store: MemoryStore, serve: Any) -> None:
    server = serve(ScriptedModel({"summary": _summary}))
    config = LLMConfig(provider="anthropic", model="claude-mem", base_url=server.url)
    *_, summary = llm_strategies(store, config, ledger=None)
    store.add_event("alice", "s1", "user", "I live in Lisbon.")
    (record,) = store.extract("alice", "s1", [summary])
    assert record.subject == "session summary" and record.namespace == "/users/alice/sessions/s1/summary"
    path, headers, body = server.requests[0]
    assert path == "/v1/messages" and headers["anthropic-version"] == "2023-06-01"
    assert body["system"].startswith("Summarise this session")


def test_bedrock_converse_provider_through_botocore_stubber(store: MemoryStore, serve: Any, tmp_path: Path) -> None:
    import boto3
    from botocore.stub import ANY, Stubber

    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    event = store.add_event("alice", "s1", "user", "I can't stand loud music while I work.")
    answer = {"memories": [{"text": "User dislikes loud music while working.", "subject": "music",
                            "polarity": "negative", "categories": ["work"], "event_ids": [event.id]}]}  # fmt: skip
    config = LLMConfig(provider="bedrock", model="anthropic.claude-mem", usd_per_1k_output_tokens=2.0)
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            serve.bedrock_converse(json.dumps(answer)),
            {"modelId": "anthropic.claude-mem", "messages": ANY, "system": ANY, "inferenceConfig": ANY},
        )
        _, preference, _ = llm_strategies(store, config, provider=BedrockConverse(config, client=client), ledger=ledger)
        (record,) = store.extract("alice", "s1", [preference])
    assert record.text == "User dislikes loud music while working."
    assert record.metadata == {"polarity": "negative", "categories": ["work"], "consolidation": "add"}
    assert ledger.spend(kind="llm", user="alice").usd == pytest.approx(8 * 2.0 / 1000)
