"""The gateway's own spans and metrics, read back through the OpenTelemetry SDK, and the OTLP round trip into the
evaluations importer (gateway spans -> OTLP/JSON -> importer -> an evaluator sees the denial)."""

from __future__ import annotations

import importlib.util
import json
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentcore.gateway import ApprovalRequired, ToolDenied

HERE = Path(__file__).resolve().parent
SUPPORT = {"id": "alice", "roles": ["support"]}
MANAGER = {"id": "mona", "roles": ["manager"]}


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def traced(make_gateway: Any) -> Any:
    """(gateway, runs, span exporter, metric reader, tracer provider): the gateway with its own SDK providers."""
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[reader])
    gw, runs = make_gateway(tracer_provider=tracer_provider, meter_provider=meter_provider)
    yield gw, runs, exporter, reader, tracer_provider
    meter_provider.shutdown()


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def _own(points: list[Any], gw: Any) -> list[Any]:
    """The approval gauges' points of ``gw``: they report every live gateway of the meter, each under its name."""
    return [p for p in points if p.attributes["gateway"] == gw.name]


def test_each_call_gets_an_execute_tool_span_under_the_callers_span(traced: Any) -> None:
    gw, _, exporter, _, provider = traced
    caller = provider.get_tracer("agent")
    with caller.start_as_current_span("agent-step"):
        gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT, session="s-1")
    with caller.start_as_current_span("agent-step"), pytest.raises(ToolDenied):
        gw.call("vault.read", {"key": "k"}, principal=SUPPORT)
    spans = exporter.get_finished_spans()
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    steps = [s for s in spans if s.name == "agent-step"]
    assert [s.name for s in tools] == ["execute_tool crm.lookup", "execute_tool vault.read"]
    for tool, step in zip(tools, steps, strict=True):
        assert tool.parent is not None and tool.parent.span_id == step.context.span_id
    allowed, denied = (dict(s.attributes or {}) for s in tools)
    assert allowed["gen_ai.operation.name"] == "execute_tool" and allowed["gen_ai.tool.name"] == "crm.lookup"
    assert allowed["agentcore.policy.decision"] == "allow" and allowed["agentcore.gateway.outcome"] == "ok"
    assert allowed["agentcore.policy.bundle_hash"] == gw.policy.status.bundle_hash
    assert allowed["gen_ai.conversation.id"] == "s-1"
    assert allowed["gen_ai.tool.call.id"] == next(gw.audit.rows())["call_id"], "the span names the audited call"
    assert "gen_ai.tool.call.arguments" not in allowed, "arguments are content: only when capture is on"
    assert denied["agentcore.policy.decision"] == "deny" and denied["error.type"] == "ToolDenied"
    assert tools[1].status.is_ok is False


def test_captured_content_and_approval_ids_go_on_the_span(traced: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    gw, _, exporter, _, _ = traced
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT)
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("refunds.issue", {"order_id": "o1", "amount": 900}, principal=SUPPORT)
    lookup, refund = (dict(s.attributes or {}) for s in exporter.get_finished_spans())
    assert json.loads(lookup["gen_ai.tool.call.arguments"]) == {"customer_id": "c1"}
    assert "4111" not in lookup["gen_ai.tool.call.result"], "the span carries the redacted result"
    assert refund["agentcore.policy.decision"] == "needs_approval"
    assert refund["agentcore.policy.approval_id"] == pending.value.approval_id


def test_metrics_count_decisions_by_effect_rule_and_tool(traced: Any) -> None:
    gw, _, _, reader, _ = traced
    gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT)
    for _ in range(2):
        with pytest.raises(ToolDenied):
            gw.call("vault.read", {"key": "k"}, principal=SUPPORT)
    with pytest.raises(ApprovalRequired):
        gw.call("refunds.issue", {"order_id": "o1", "amount": 900}, principal=SUPPORT)
    points = _points(reader)
    counts = {(p.attributes["effect"], p.attributes["tool"]): p.value for p in points["agentcore.gateway.decisions"]}
    assert counts[("allow", "crm.lookup")] == 1
    assert counts[("deny", "vault.read")] == 2
    assert counts[("needs_approval", "refunds.issue")] == 1
    rules = {
        p.attributes["rule"] for p in points["agentcore.gateway.decisions"] if p.attributes["tool"] == "refunds.issue"
    }
    assert rules and all(rules), "each determining rule is its own series"
    latency = {p.attributes["outcome"]: p.count for p in points["agentcore.gateway.call.duration"]}
    assert latency == {"ok": 1, "ToolDenied": 2, "ApprovalRequired": 1}
    assert sum(p.count for p in points["agentcore.gateway.decision.duration"]) == 4
    assert sum(p.count for p in points["agentcore.gateway.audit.write.duration"]) >= 5
    (pending,) = _own(points["agentcore.gateway.approvals.pending"], gw)
    (age,) = _own(points["agentcore.gateway.approvals.oldest_age"], gw)
    assert pending.value == 1 and age.value >= 0


def test_approved_call_runs_in_its_own_span_and_settles_the_gauge(traced: Any) -> None:
    gw, runs, exporter, reader, _ = traced
    with pytest.raises(ApprovalRequired) as pending:
        gw.call("refunds.issue", {"order_id": "o1", "amount": 900}, principal=SUPPORT)
    gw.approvals.approve(pending.value.approval_id, by=MANAGER)
    assert runs["refunds.issue"] == 1
    executed = exporter.get_finished_spans()[-1]
    assert executed.name == "execute_tool refunds.issue"
    assert (executed.attributes or {})["agentcore.policy.decision"] == "allow"
    assert (executed.attributes or {})["agentcore.policy.approval_id"] == pending.value.approval_id
    (waiting,) = _own(_points(reader)["agentcore.gateway.approvals.pending"], gw)
    assert waiting.value == 0


def test_approval_gauges_report_only_the_gateways_of_their_own_meter(make_gateway: Any, tmp_path: Path) -> None:
    """Two gateways named alike, each with its own meter provider, never see each other's approvals; two sharing a
    provider and a name are added up, not overwritten."""
    readers = [InMemoryMetricReader() for _ in range(2)]
    providers = [MeterProvider(metric_readers=[reader]) for reader in readers]
    first, _ = make_gateway(name="shop", meter_provider=providers[0], database=str(tmp_path / "a.db"))
    second, _ = make_gateway(name="shop", meter_provider=providers[1], database=str(tmp_path / "b.db"))
    twin, _ = make_gateway(name="shop", meter_provider=providers[1], database=str(tmp_path / "c.db"))
    for gw, pending in ((first, 1), (second, 2), (twin, 3)):
        for n in range(pending):
            with pytest.raises(ApprovalRequired):
                gw.call("refunds.issue", {"order_id": f"o{n}", "amount": 900}, principal=SUPPORT)
    try:
        seen = [[p.value for p in _points(reader)["agentcore.gateway.approvals.pending"]] for reader in readers]
        assert seen == [[1], [5]]
    finally:
        for provider in providers:
            provider.shutdown()


def test_audit_write_failures_are_counted(traced: Any, tmp_path: Path) -> None:
    gw, runs, _, reader, _ = traced
    gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT)
    assert gw.flush() == 0  # its deferred outcome is committed (and timed) before the database fails
    with sqlite3.connect(tmp_path / "gw.db") as db:  # the database starts refusing audit records
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON gateway_audit BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    with pytest.raises(ToolDenied):  # its allow decision cannot be recorded: fail closed
        gw.call("crm.lookup", {"customer_id": "c2"}, principal=SUPPORT)
    assert runs == {"crm.lookup": 1}
    points = _points(reader)
    assert sum(p.value for p in points["agentcore.gateway.audit.write.failures"]) >= 1
    assert sum(p.count for p in points["agentcore.gateway.audit.write.duration"]) == 2


def test_nothing_is_recorded_without_a_provider(make_gateway: Any) -> None:
    """Unconfigured (no SDK provider given or installed globally), a call builds no telemetry at all."""
    gw, runs = make_gateway()
    assert gw.telemetry.tool_call("crm.lookup", None) is None
    gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT)
    assert runs == {"crm.lookup": 1}


def test_round_trip_gateway_spans_otlp_json_importer_sees_the_denial(traced: Any, tmp_path: Path) -> None:
    """Spans as the OTLP exporter encodes them, written as OTLP/JSON, load as a session whose denied call counts
    as denied: GoalSuccessRate fails it (before the attribute fix it counted as a success)."""
    from agentcore.evaluations import load_sessions
    from agentcore.evaluations.builtin.goals import GoalSuccessRate
    from agentcore.evaluations.trace import Session

    gw, _, exporter, _, provider = traced
    agent = provider.get_tracer("agent")
    with agent.start_as_current_span("invoke_agent", attributes={"gen_ai.conversation.id": "sess-rt"}):
        gw.call("crm.lookup", {"customer_id": "c1"}, principal=SUPPORT, session="sess-rt")
        with pytest.raises(ToolDenied):
            gw.call("vault.read", {"key": "k"}, principal=SUPPORT, session="sess-rt")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(_load("otlp_json").otlp_json(encode_spans(exporter.get_finished_spans()))))
    (session,) = load_sessions(path)
    assert session.id == "sess-rt"
    assert [(c.name, c.decision) for c in session.tool_calls] == [("crm.lookup", "allow"), ("vault.read", "deny")]
    verdict = _judge(GoalSuccessRate(), session.model_copy(update={"reference": None}))
    assert verdict.score == 0.0 and "vault.read" in verdict.explanation
    assert isinstance(session, Session)


def _judge(evaluator: Any, session: Any) -> Any:
    from agentcore.evaluations.base import Target

    return evaluator.judge_one(Target(session=session), None)


def test_otel_environment_exports_to_a_real_receiver_process(tmp_path: Path) -> None:
    """``OTEL_EXPORTER_OTLP_ENDPOINT`` alone makes a gateway process export spans and metrics over OTLP/HTTP to a
    receiver process (uvicorn, decoding with opentelemetry-proto); the exported spans import as a session."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free_port = int(sock.getsockname()[1])
    received = tmp_path / "received"
    received.mkdir()
    receiver = subprocess.Popen([sys.executable, str(HERE / "otlp_receiver.py"), str(free_port), str(received)])
    try:
        url = f"http://127.0.0.1:{free_port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/ready", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SERVICE_NAME": "gw-under-test"}
        env.pop("OTEL_SDK_DISABLED", None)
        script = tmp_path / "run.py"
        script.write_text(_GATEWAY_SCRIPT.format(here=str(HERE), tmp=str(tmp_path)))
        subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=120)
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)
    from agentcore.evaluations import load_sessions

    (session,) = load_sessions(received / "traces.jsonl")
    assert [(c.name, c.decision) for c in session.tool_calls] == [("crm.lookup", "allow"), ("vault.read", "deny")]
    metrics = (received / "metrics.jsonl").read_text()
    assert "agentcore.gateway.decisions" in metrics and "gw-under-test" in metrics


_GATEWAY_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {here!r})
from conftest import SUPPORT, build_support_gateway
from agentcore.gateway import ToolDenied

gw, _ = build_support_gateway(Path({tmp!r}))
gw.call("crm.lookup", {{"customer_id": "c1"}}, principal=SUPPORT, session="sess-env")
try:
    gw.call("vault.read", {{"key": "k"}}, principal=SUPPORT, session="sess-env")
except ToolDenied:
    pass
gw.close()
"""  # the SDK providers flush at exit


def test_unknown_exporter_names_are_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcore.errors import ConfigError
    from agentcore.gateway.otel_setup import requested

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp,zipkin")
    with pytest.raises(ConfigError, match="zipkin"):
        requested("traces")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert requested("traces") == []
    monkeypatch.delenv("OTEL_TRACES_EXPORTER")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
    assert requested("traces") == ["otlp"] and requested("metrics") == []
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert requested("traces") == []


def test_concurrent_async_calls_each_get_their_own_span(traced: Any) -> None:
    import asyncio

    gw, _, exporter, _, _ = traced

    async def burst() -> None:
        await asyncio.gather(*(gw.acall("crm.lookup", {"customer_id": f"c{i}"}, principal=SUPPORT) for i in range(4)))

    asyncio.run(burst())
    spans = [s for s in exporter.get_finished_spans() if s.name == "execute_tool crm.lookup"]
    assert len(spans) == 4 and len({s.context.span_id for s in spans}) == 4
    assert all((s.attributes or {})["agentcore.policy.decision"] == "allow" for s in spans)


def test_tools_run_inside_their_call_span_and_unsampled_calls_still_propagate(tmp_path: Path) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    from agentcore import Gateway

    from .conftest import write_policy

    exporter, seen = InMemorySpanExporter(), []
    recorded, dropped = TracerProvider(), TracerProvider(sampler=ALWAYS_OFF)
    for provider in (recorded, dropped):
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    for n, provider in enumerate((recorded, dropped)):
        policy = write_policy(tmp_path / f"p{n}", 'policy "p" version 1 owner "t"\n\nallow probe.\n')
        gw = Gateway(policy, database=str(tmp_path / f"g{n}.db"), tracer_provider=provider)
        gw.tool(lambda: seen.append(trace.get_current_span()) or "ok", name="probe")
        assert gw.call("probe", {}, principal=SUPPORT) == "ok"
        gw.close()
    (executed,) = exporter.get_finished_spans()
    assert executed.name == "execute_tool probe"
    assert dict(executed.attributes or {})["agentcore.gateway.outcome"] == "ok"
    assert seen[0].get_span_context().span_id == executed.context.span_id, "the tool runs in its call's span"
    assert not seen[1].is_recording() and seen[1].get_span_context().is_valid, "dropped, yet current for children"
    assert trace.get_current_span() is trace.INVALID_SPAN, "the call's context is detached afterwards"
