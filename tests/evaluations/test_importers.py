"""Importers: our JSONL schema, OTLP/JSON with GenAI and OpenInference attributes, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcore.evaluations import Retrieval, ToolCall, TraceFormatError, load_sessions
from agentcore.evaluations.trace import ModelCall

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "evals"
DATA = Path(__file__).resolve().parent / "data"


def test_jsonl_sessions_load_with_spans_and_references() -> None:
    sessions = load_sessions(EXAMPLES / "traces.jsonl")
    assert [s.id for s in sessions] == ["sess-cancel-001", "sess-address-002", "sess-policy-003", "sess-refusal-004"]
    first = sessions[0]
    assert [call.name for call in first.tool_calls] == ["get_order_details", "cancel_pending_order"]
    assert first.tool_calls[0].decision == "allow"
    assert first.reference is not None and first.reference.expected_trajectory == [
        "get_order_details",
        "cancel_pending_order",
    ]
    assert first.traces[0].documents, "tool results count as context"


def test_otlp_genai_export_becomes_a_session(tmp_path: Path) -> None:
    (session,) = load_sessions(EXAMPLES / "otel_genai.json")
    assert session.id == "sess-otel-005"
    (trace,) = session.traces
    assert trace.input == "What is the status of order #W7273336?"
    assert trace.output.startswith("Order #W7273336 was delivered")
    assert trace.system is not None and "commas" in trace.system
    assert [tool.name for tool in trace.tools] == ["get_order_details"]
    call = trace.tool_calls[0]
    assert call.arguments == {"order_id": "#W7273336"} and call.decision == "allow"
    assert call.result["city"] == "Denver"
    model = next(span for span in trace.spans if isinstance(span, ModelCall))
    assert (model.model, model.input_tokens, model.output_tokens) == ("gpt-4o", 412, 38)


def test_openinference_jsonl_export_groups_traces_by_session() -> None:
    (session,) = load_sessions(DATA / "openinference.jsonl")
    assert session.id == "sess-oi" and len(session.traces) == 2
    answer, failed = session.traces
    assert answer.input == "Which plan includes priority support?"
    retrieval = next(span for span in answer.spans if isinstance(span, Retrieval))
    assert retrieval.documents == [
        "Priority support is part of the Business plan.",
        "The Starter plan has email support.",
    ]
    model = next(span for span in answer.spans if isinstance(span, ModelCall))
    assert model.model == "gpt-4o-mini" and model.output == "The Business plan includes priority support."
    (call,) = failed.spans
    assert isinstance(call, ToolCall) and call.name == "crm.lookup" and call.error == "timeout after 30s"


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ('{"id": "a", "traces": []}\n{"id": "b", "traces": [\n', 2, "invalid JSON"),
        ('{"id": "a", "traces": []}\n\n{"id": "b", "traces": [{"input": "hi"}]}\n', 3, "traces.0.id: Field required"),
        ('{"id": "a", "traces": [], "schema": "other/9"}\n', 1, "unsupported schema"),
        ('{"id": "a", "traces": []}\n{"id": "a", "traces": []}\n', 2, "repeats line 1"),
        (
            '{"id": "a", "traces": [{"id": "t", "spans": [{"kind": "tool_call", "name": "x"}]}]}\n',
            1,
            "id: Field required",
        ),
        ('{"hello": 1}\n', 1, "unrecognised trace format"),
    ],
)
def test_malformed_jsonl_names_file_and_line(tmp_path: Path, content: str, line: int, fragment: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TraceFormatError) as caught:
        load_sessions(path)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert fragment in str(caught.value)


def test_otlp_span_without_trace_id_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "otel.jsonl"
    good = (DATA / "openinference.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path.write_text(good + '\n{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "x", "name": "orphan"}]}]}]}\n')
    with pytest.raises(TraceFormatError, match=r"otel\.jsonl:2: span #0 \('orphan'\) has no traceId"):
        load_sessions(path)


def test_missing_and_empty_files_are_clear(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="does not exist"):
        load_sessions(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(TraceFormatError, match="empty"):
        load_sessions(tmp_path / "empty.jsonl")


def _attr(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


def test_openinference_tool_definitions_are_read(tmp_path: Path) -> None:
    """``llm.tools.N.tool.json_schema`` on an LLM span names the tools offered (ToolSelectionAccuracy needs them)."""
    schema = {"type": "function", "function": {"name": "crm.lookup", "description": "Find a customer",
                                               "parameters": {"type": "object"}}}  # fmt: skip
    llm = [
        _attr("openinference.span.kind", "LLM"),
        _attr("llm.tools.1.tool.json_schema", '{"name": "vault.read"}'),
        _attr("llm.tools.0.tool.json_schema", json.dumps(schema)),
    ]
    spans = [{"traceId": "t", "spanId": "s", "name": "llm", "attributes": llm}]
    path = tmp_path / "oi.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    (session,) = load_sessions(path)
    tools = session.traces[0].tools
    assert [(t.name, t.description) for t in tools] == [("crm.lookup", "Find a customer"), ("vault.read", "")]
    assert tools[0].parameters == {"type": "object"}


def test_a_lone_surrogate_is_refused_with_file_and_line(tmp_path: Path) -> None:
    """JSON can spell half a UTF-16 pair (``"\\ud800"``), which is no text and which no report can write: `eval run`
    stopped with a serialisation traceback. A whole pair is an emoji and loads; in any format, the line is named."""
    paired = {"id": "a", "traces": [{"id": "t", "input": "hi \U0001f600", "output": "ok"}]}
    half = {"id": "b", "traces": [{"id": "t", "input": "hi", "output": "half \ud800"}]}
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text(json.dumps(paired) + "\n" + json.dumps(half) + "\n")  # ASCII JSON: the emoji as a pair
    with pytest.raises(TraceFormatError, match=r"t\.jsonl:2: \$\.traces\[0\]\.output: contains a lone surrogate"):
        load_sessions(jsonl)
    jsonl.write_text(json.dumps(paired) + "\n")
    assert load_sessions(jsonl)[0].traces[0].input == "hi \U0001f600"
    spans = [{"traceId": "t", "spanId": "s", "name": "llm \udfff", "attributes": [_attr("input.value", "x")]}]
    otlp = tmp_path / "otel.json"
    otlp.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    with pytest.raises(TraceFormatError, match=r"otel\.json: \S+\.name: contains a lone surrogate"):
        load_sessions(otlp)


_LONE = "\ud800"  # written escaped by json.dumps: what a bad decode upstream leaves in a trace file
_OTLP_PREFIX = "$.resourceSpans[0].scopeSpans[0].spans[0]"


def _otlp(attributes: list[dict[str, object]]) -> str:
    spans = [{"traceId": "t", "spanId": "s", "name": "agent", "attributes": attributes}]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


@pytest.mark.parametrize(
    ("content", "line", "where"),
    [
        (json.dumps({"id": "s", "traces": [{"id": "t", "input": "hi", "output": f"ok {_LONE}"}]}), 1,
         "$.traces[0].output"),
        (json.dumps({"id": "s", "traces": [{"id": "t", "spans": [
            {"kind": "tool_call", "id": "c", "name": "x", "arguments": {_LONE: 1}}]}]}), 1,
         "$.traces[0].spans[0].arguments (a key)"),
        (json.dumps({"prev_hash": "0", "seq": 0, "kind": "decision", "call_id": "c", "tool": "t", "effect": "deny",
                     "detail": {"args": {"order": ["o1", _LONE]}}}), 1, "$.detail.args.order[1]"),
        (_otlp([_attr("output.value", _LONE)]), None, f"{_OTLP_PREFIX}.attributes[0].value.stringValue"),
        # JSON inside an attribute: the file holds the escape as text, the importer decodes it to a lone surrogate
        (_otlp([_attr("openinference.span.kind", "LLM"), _attr("llm.tools.0.tool.json_schema", '{"name": "\\ud800"}')]),
         None, "session 't': $.traces[0].tools[0].name"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_in_a_trace_is_refused_at_import(
    tmp_path: Path, content: str, line: int | None, where: str
) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(content + "\n", encoding="utf-8")
    with pytest.raises(TraceFormatError) as caught:
        load_sessions(path)
    assert caught.value.line == line
    assert f"{where}: contains a lone surrogate" in str(caught.value) and str(caught.value).startswith(str(path))


def test_a_trace_file_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    """The UTF-8 encoding of a surrogate (or any invalid byte) raised UnicodeDecodeError: a crash, not bad input."""
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b'{"id": "a", "traces": []}\n{"id": "s", "traces": [{"id": "t", "output": "\xed\xa0\x80"}]}\n')
    with pytest.raises(TraceFormatError, match=r"traces\.jsonl:2: not UTF-8 text \(byte 0xed at column 47\)"):
        load_sessions(path)
