"""Reader for OpenTelemetry OTLP/JSON trace exports using GenAI semantic conventions or OpenInference.

Spans are grouped by ``traceId`` into turns, turns by ``session.id`` / ``gen_ai.conversation.id`` into
sessions (tenant: ``agentcore.tenant`` / ``tenant.id``). Tool, retrieval and model-call spans become our
spans; model calls keep their token usage (``gen_ai.usage.*_tokens`` or OpenInference ``llm.token_count.*``).
The root span (or, failing that, the model calls) gives the turn's input and output. Accepts one JSON
document or one export request per line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcore.evaluations.errors import TraceFormatError
from agentcore.evaluations.importers.jsonl import ESCAPE, describe_validation, read_trace_text, refuse_lone_surrogates
from agentcore.evaluations.trace import ModelCall, Retrieval, Session, Span, ToolCall, ToolSpec, Trace

_TOOL_KINDS = {"TOOL", "execute_tool"}
_RETRIEVER_KINDS = {"RETRIEVER", "retrieval"}
_MODEL_KINDS = {"LLM", "chat", "text_completion", "generate_content"}
_SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
_TENANT_KEYS = ("agentcore.tenant", "tenant.id")
# the gateway's own spans write ``agentcore.policy.decision``; the others are older and AgentCore's spellings
_DECISION_KEYS = (
    "agentcore.policy.decision",
    "agentcore.gateway.decision",
    "aws.agentcore.policy.authorization_decision",
)
_OI_TOOLS = "llm.tools."  # OpenInference: llm.tools.N.tool.json_schema, one JSON tool definition each


def _value(raw: dict[str, Any]) -> Any:
    """Decode an OTLP AnyValue (``{"stringValue": ...}``, arrays, key-value lists)."""
    if "arrayValue" in raw:
        return [_value(item) for item in raw["arrayValue"].get("values", [])]
    if "kvlistValue" in raw:
        return {item["key"]: _value(item.get("value", {})) for item in raw["kvlistValue"].get("values", [])}
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in raw:
            return raw[key]
    if "intValue" in raw:
        return int(raw["intValue"])
    return None


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _message_text(message: Any) -> str:
    """Text of a GenAI message (``content`` or ``parts[].content``)."""
    if not isinstance(message, dict):
        return str(message)
    if isinstance(message.get("content"), str):
        return str(message["content"])
    parts = message.get("parts") or []
    return "\n".join(str(part.get("content", "")) for part in parts if isinstance(part, dict) and part.get("content"))


def _messages(attrs: dict[str, Any], genai_key: str, oi_prefix: str) -> list[tuple[str, str]]:
    """(role, text) pairs from ``gen_ai.*.messages`` JSON or OpenInference's flattened ``llm.*_messages.N``."""
    parsed = _maybe_json(attrs.get(genai_key))
    if isinstance(parsed, list):
        return [(str(m.get("role", "")) if isinstance(m, dict) else "", _message_text(m)) for m in parsed]
    found: dict[int, dict[str, str]] = defaultdict(dict)
    for key, value in attrs.items():
        if key.startswith(oi_prefix):
            index, _, field = key[len(oi_prefix) :].partition(".message.")
            if index.isdigit() and field in ("role", "content"):
                found[int(index)][field] = str(value)
    return [(found[i].get("role", ""), found[i].get("content", "")) for i in sorted(found)]


def _kind(attrs: dict[str, Any]) -> str:
    return str(attrs.get("openinference.span.kind") or attrs.get("gen_ai.operation.name") or "")


def _tool_call(span: dict[str, Any], attrs: dict[str, Any]) -> ToolCall:
    arguments = _maybe_json(
        attrs.get("gen_ai.tool.call.arguments", attrs.get("tool.parameters", attrs.get("input.value")))
    )
    status = span.get("status") or {}
    failed = status.get("code") in (2, "STATUS_CODE_ERROR")
    return ToolCall(
        id=str(span["spanId"]),
        name=str(attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or span.get("name", "")),
        arguments=arguments if isinstance(arguments, dict) else {},
        result=_maybe_json(attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))),
        error=(status.get("message") or "error") if failed else None,
        decision=next((str(attrs[key]) for key in _DECISION_KEYS if key in attrs), None),
    )


def _retrieval(span: dict[str, Any], attrs: dict[str, Any]) -> Retrieval:
    docs: dict[int, str] = {}
    for key, value in attrs.items():
        if key.startswith("retrieval.documents.") and key.endswith(".document.content"):
            index = key.split(".")[2]
            if index.isdigit():
                docs[int(index)] = str(value)
    return Retrieval(
        id=str(span["spanId"]), query=str(attrs.get("input.value", "")), documents=[docs[i] for i in sorted(docs)]
    )


def _model_call(span: dict[str, Any], attrs: dict[str, Any]) -> ModelCall:
    inputs = _messages(attrs, "gen_ai.input.messages", "llm.input_messages.")
    outputs = _messages(attrs, "gen_ai.output.messages", "llm.output_messages.")
    return ModelCall(
        id=str(span["spanId"]),
        model=str(attrs.get("gen_ai.request.model") or attrs.get("llm.model_name") or ""),
        input=next((text for role, text in reversed(inputs) if role == "user"), str(attrs.get("input.value", ""))),
        output=outputs[-1][1] if outputs else str(attrs.get("output.value", "")),
        input_tokens=_tokens(attrs, "gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        output_tokens=_tokens(attrs, "gen_ai.usage.output_tokens", "llm.token_count.completion"),
    )


def _tokens(attrs: dict[str, Any], genai_key: str, openinference_key: str) -> int | None:
    """A token count from GenAI usage or OpenInference ``llm.token_count.*`` attributes (None when absent)."""
    value = attrs.get(genai_key, attrs.get(openinference_key))
    return None if value is None else int(value)


def _openinference_tools(attrs: dict[str, Any]) -> list[Any]:
    """OpenInference's flattened ``llm.tools.N.tool.json_schema`` definitions, in index order."""
    found: dict[int, Any] = {}
    for key, value in attrs.items():
        index, _, field = key[len(_OI_TOOLS) :].partition(".")
        if key.startswith(_OI_TOOLS) and index.isdigit() and field == "tool.json_schema":
            found[int(index)] = _maybe_json(value)
    return [found[i] for i in sorted(found)]


def _tools(attrs: dict[str, Any]) -> list[ToolSpec]:
    """Tool definitions offered to the model: GenAI ``gen_ai.tool.definitions`` or OpenInference ``llm.tools.*``."""
    definitions = _maybe_json(attrs.get("gen_ai.tool.definitions"))
    if not isinstance(definitions, list):
        definitions = _openinference_tools(attrs)
    specs: list[ToolSpec] = []
    for item in definitions:
        function = item.get("function", item) if isinstance(item, dict) else {}
        if "name" in function:
            specs.append(
                ToolSpec(
                    name=str(function["name"]),
                    description=str(function.get("description", "")),
                    parameters=function.get("parameters") or {},
                )
            )
    return specs


def _turn(trace_id: str, spans: list[tuple[dict[str, Any], dict[str, Any]]]) -> Trace:
    spans.sort(key=lambda item: int(item[0].get("startTimeUnixNano", 0) or 0))
    ids = {span["spanId"] for span, _ in spans}
    root_attrs = next((attrs for span, attrs in spans if span.get("parentSpanId") not in ids), spans[0][1])
    children: list[Span] = []
    system: str | None = root_attrs.get("gen_ai.system_instructions")
    tools: list[ToolSpec] = []
    for span, attrs in spans:
        kind = _kind(attrs)
        tools = tools or _tools(attrs)
        if kind in _TOOL_KINDS:
            children.append(_tool_call(span, attrs))
        elif kind in _RETRIEVER_KINDS:
            children.append(_retrieval(span, attrs))
        elif kind in _MODEL_KINDS:
            children.append(_model_call(span, attrs))
            system = system or next(
                (
                    text
                    for role, text in _messages(attrs, "gen_ai.input.messages", "llm.input_messages.")
                    if role == "system"
                ),
                None,
            )
    models = [span for span in children if isinstance(span, ModelCall)]
    user_input = _message_or_value(root_attrs, "gen_ai.input.messages", "input.value", last_role="user")
    output = _message_or_value(root_attrs, "gen_ai.output.messages", "output.value", last_role=None)
    return Trace(
        id=trace_id,
        input=user_input or (models[0].input if models else ""),
        output=output or (models[-1].output if models else ""),
        system=str(system) if system else None,
        tools=tools,
        spans=children,
    )


def _message_or_value(attrs: dict[str, Any], genai_key: str, oi_key: str, last_role: str | None) -> str:
    messages = _messages(attrs, genai_key, "\0")
    chosen = [text for role, text in messages if last_role is None or role == last_role]
    if chosen:
        return chosen[-1]
    value = attrs.get(oi_key)
    return "" if value is None else str(value)


def _spans_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for resource in request.get("resourceSpans", request.get("resource_spans", [])):
        for scope in resource.get("scopeSpans", resource.get("instrumentationLibrarySpans", [])):
            spans.extend(scope.get("spans", []))
    return spans


def _documents(path: Path, text: str) -> list[tuple[int | None, dict[str, Any]]]:
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as error:
        if error.lineno > 1 or "\n" not in text.strip():
            lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
            if len(lines) > 1:
                return [(n, _parse_line(path, n, line)) for n, line in lines]
        raise TraceFormatError(path, error.lineno, f"invalid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(whole, dict):
        raise TraceFormatError(path, 1, "expected an OTLP/JSON object with 'resourceSpans'")
    if ESCAPE in text:
        refuse_lone_surrogates(path, None, whole)
    return [(None, whole)]


def _parse_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise TraceFormatError(path, number, f"invalid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(value, dict):
        raise TraceFormatError(path, number, "expected an OTLP/JSON export request object")
    if ESCAPE in line:
        refuse_lone_surrogates(path, number, value)
    return value


def read_otlp_sessions(path: Path, text: str | None = None) -> list[Session]:
    """Sessions from an OTLP/JSON export; turns ordered by start time, sessions by first appearance."""
    content = read_trace_text(path) if text is None else text
    by_trace: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    session_of: dict[str, str] = {}
    tenant_of: dict[str, str] = {}
    line_of: dict[str, int | None] = {}
    for line, request in _documents(path, content):
        for index, span in enumerate(_spans_of(request)):
            missing = [key for key in ("traceId", "spanId") if not span.get(key)]
            if missing:
                raise TraceFormatError(path, line, f"span #{index} ({span.get('name', '?')!r}) has no {missing[0]}")
            attrs = {item["key"]: _value(item.get("value", {})) for item in span.get("attributes", []) if "key" in item}
            trace_id = str(span["traceId"])
            by_trace[trace_id].append((span, attrs))
            line_of.setdefault(trace_id, line)
            for key in _SESSION_KEYS:
                if key in attrs:
                    session_of.setdefault(trace_id, str(attrs[key]))
            for key in _TENANT_KEYS:
                if key in attrs:
                    tenant_of.setdefault(trace_id, str(attrs[key]))
    if not by_trace:
        raise TraceFormatError(path, None, "no spans found under resourceSpans[].scopeSpans[].spans")
    grouped: dict[str, list[Trace]] = defaultdict(list)
    tenants: dict[str, str] = {}
    for trace_id, spans in by_trace.items():
        session_id = session_of.get(trace_id, trace_id)
        if trace_id in tenant_of:
            tenants.setdefault(session_id, tenant_of[trace_id])
        try:
            grouped[session_id].append(_turn(trace_id, spans))
        except ValidationError as error:
            raise TraceFormatError(path, line_of[trace_id], f"trace {trace_id}: {describe_validation(error)}") from None
    sessions = [Session(id=key, traces=traces, tenant=tenants.get(key)) for key, traces in grouped.items()]
    for session in sessions if ESCAPE in content else ():  # JSON text in an attribute may decode to one
        refuse_lone_surrogates(path, None, session.model_dump(exclude_defaults=True), f"session {session.id!r}: $")
    return sessions
