"""LLM spans' token usage: read from GenAI and OpenInference attributes, priced per session and tenant."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentcore.accel.serving.catalogue import load_llms
from agentcore.accel.serving.pricing import card_for
from agentcore.accel.sim.profiles import load_catalog
from agentcore.cli import app
from agentcore.evaluations import load_sessions
from agentcore.evaluations.llm_cost import mean_call_shape, price_sessions

runner = CliRunner()


def _attrs(**values: Any) -> list[dict[str, Any]]:
    kinds = {str: "stringValue", int: "intValue"}
    return [{"key": key.replace("__", "."), "value": {kinds[type(v)]: str(v) if isinstance(v, int) else v}}
            for key, v in values.items()]  # fmt: skip


def _span(trace: str, span: str, parent: str | None = None, **attributes: Any) -> dict[str, Any]:
    found = {
        "traceId": trace,
        "spanId": span,
        "name": span,
        "startTimeUnixNano": "1",
        "attributes": _attrs(**attributes),
    }
    return {**found, "parentSpanId": parent} if parent else found


def _write_traces(path: Path) -> Path:
    genai = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    spans = [
        _span("t1", "root", **{"session.id": "s1", "agentcore.tenant": "acme"}),
        _span("t1", "m1", "root", **genai, **{"gen_ai.usage.input_tokens": 1200, "gen_ai.usage.output_tokens": 150}),
        _span("t2", "root2", **{"session.id": "s1"}),
        _span("t2", "m2", "root2", **genai, **{"gen_ai.usage.input_tokens": 1800, "gen_ai.usage.output_tokens": 250}),
        _span("t3", "root3", **{"session.id": "s2", "tenant.id": "globex"}),
        _span(
            "t3",
            "m3",
            "root3",
            **{
                "openinference.span.kind": "LLM",
                "llm.model_name": "claude",
                "llm.token_count.prompt": 3000,
                "llm.token_count.completion": 400,
            },
        ),
        _span(
            "t3", "m4", "root3", **{"openinference.span.kind": "LLM", "llm.model_name": "claude"}
        ),  # no usage recorded
    ]
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}), encoding="utf-8")
    return path


def test_token_usage_and_tenants_are_imported_and_priced_per_session(tmp_path: Path) -> None:
    sessions = load_sessions(_write_traces(tmp_path / "traces.json"))
    first, second = sessions
    assert (first.tenant, second.tenant) == ("acme", "globex")
    assert [(c.input_tokens, c.output_tokens) for c in first.model_calls] == [(1200, 150), (1800, 250)]
    profiles, llms = load_catalog(), load_llms()
    cards = {name: card_for(llms, profiles.chips[name], "llama-3.1-70b") for name in ("trn3", "h100")}
    report = price_sessions(sessions, cards)
    assert report.simulated and report.priced_calls == 3 and report.unpriced_calls == 1
    assert report.sessions[0].input_tokens == 3000 and report.sessions[1].output_tokens == 400
    assert report.sessions[0].usd["trn3"] == pytest.approx(cards["trn3"].price(3000, 400).usd)
    assert report.tenants["acme"]["h100"] == pytest.approx(report.sessions[0].usd["h100"])
    assert report.totals["trn3"] < report.totals["h100"]
    assert mean_call_shape(sessions, (1, 1)) == (2000, 267) and mean_call_shape([], (5, 6)) == (5, 6)


def test_price_traces_command(tmp_path: Path) -> None:
    traces = _write_traces(tmp_path / "traces.json")
    chart = tmp_path / "cost.svg"
    result = runner.invoke(
        app, ["accel", "price-traces", str(traces), "--device", "trn3-ultraserver-gen2", "--vs", "h100",
              "--model", "llama-3.1-70b", "--chart", str(chart), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["devices"] == ["trn3-ultraserver-gen2", "h100"] and set(report["tenants"]) == {"acme", "globex"}
    assert chart.read_text().startswith("<svg")
    table = runner.invoke(app, ["accel", "price-traces", str(traces), "--vs", "trn2"])
    assert table.exit_code == 0 and "per session" in table.output
    missing = runner.invoke(app, ["accel", "price-traces", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2
    unknown = runner.invoke(app, ["accel", "price-traces", str(traces), "--model", "gpt-9"])
    assert unknown.exit_code == 2 and "unknown LLM 'gpt-9'" in unknown.output


def test_eval_run_prices_llm_calls_and_times_the_run_in_every_report(tmp_path: Path) -> None:
    traces = _write_traces(tmp_path / "traces.json")
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'[suite]\nname = "priced"\ntraces = ["{traces.name}"]\n'
        '[[evaluators]]\nid = "Custom.Order"\ntype = "keywords"\noptions = { keywords = ["order"], mode = "any" }\n'
    )
    out = tmp_path / "out"
    files = ["--report", str(out / "r.json"), "--html", str(out / "r.html"), "--markdown", str(out / "s.md")]
    before = datetime.now(UTC)
    result = runner.invoke(app, ["eval", "run", str(suite), "--no-cache", "--price-vs", "h100", *files])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "r.json").read_text())
    cost, timing = report["llm_cost"], report["timing"]
    assert cost["simulated"] and cost["devices"] == ["trn3", "h100"] and cost["model"] == "llama-3.1-70b"
    assert (cost["priced_calls"], cost["unpriced_calls"]) == (3, 1) and set(cost["tenants"]) == {"acme", "globex"}
    sessions, llms, chips = load_sessions(traces), load_llms(), load_catalog().chips
    shape = mean_call_shape(sessions, (1, 1))
    cards = {device: card_for(llms, chips[device], "llama-3.1-70b", shape=shape) for device in ("trn3", "h100")}
    expected = price_sessions(sessions, cards)
    assert cost["totals"] == pytest.approx(expected.totals)
    started, finished = datetime.fromisoformat(timing["started_at"]), datetime.fromisoformat(timing["finished_at"])
    assert timing["version"] == 1 and before <= started <= finished <= datetime.now(UTC)
    assert timing["duration_s"] == pytest.approx((finished - started).total_seconds())
    html, markdown = (out / "r.html").read_text(), (out / "s.md").read_text()
    for text in (html, markdown):
        assert "Simulated LLM serving cost" in text and "3 LLM calls with 6,000 input / 800 output tokens" in text
        assert f"${expected.totals['h100']:.6f}" in text and f"Ran {started:%Y-%m-%d %H:%M:%S}Z" in text
    assert "globex" in html and f"${expected.sessions[1].usd['trn3']:.6f}" in html
    unknown = runner.invoke(app, ["eval", "run", str(suite), "--price-model", "gpt-9"])
    assert unknown.exit_code == 2 and "unknown LLM 'gpt-9'" in unknown.output
    bad_device = runner.invoke(app, ["eval", "run", str(suite), "--price-device", "tpu9"])
    assert bad_device.exit_code == 2 and "tpu9" in bad_device.output
