"""The gateway's own span per tool call and its metrics, both skipped while OpenTelemetry is not configured.

Each call gets a GenAI ``execute_tool`` span (a child of the caller's current span, if any) carrying the decision as
``agentcore.policy.*`` attributes; its end-to-end and decision latencies and the decision go to the metrics of
:mod:`agentcore.gateway.metrics`. Arguments and results go on the span only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``: they are the callers' data.
"""

from __future__ import annotations

import json
import time
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

from opentelemetry import metrics, trace

from agentcore.accel.telemetry import capture_content, tracer
from agentcore.gateway import canonical
from agentcore.gateway.metrics import SCOPE, GatewayMetrics, gateway_metrics

_current: ContextVar[ToolCallTelemetry | None] = ContextVar("agentcore_tool_call", default=None)


class ToolCallTelemetry:
    """One call's span and timings; ``with`` it around the call (sync or async)."""

    __slots__ = ("_opened", "_token", "decided", "instruments", "span", "spans", "started", "tool")

    def __init__(self, spans: trace.Tracer | None, instruments: GatewayMetrics | None, tool: str, session: Any) -> None:
        self.spans, self.instruments, self.tool = spans, instruments, str(tool)[:200]
        self.decided = False
        self.span: trace.Span | None = None
        self._opened: Any = None
        self._token: Token[ToolCallTelemetry | None] | None = None
        self.started = 0.0
        if spans is not None:
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": self.tool}
            if isinstance(session, str):
                attributes["gen_ai.conversation.id"] = attributes["session.id"] = session
            self._opened = spans.start_as_current_span(
                f"execute_tool {self.tool}", kind=trace.SpanKind.INTERNAL, attributes=attributes
            )

    def __enter__(self) -> ToolCallTelemetry:
        self.started = time.perf_counter()
        if self._opened is not None:
            self.span = self._opened.__enter__()
        self._token = _current.set(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._token is not None:
            _current.reset(self._token)
        if self.instruments is not None:
            outcome = "ok" if kind is None else kind.__name__
            self.instruments.call_duration.record(
                time.perf_counter() - self.started, {"tool": self.tool, "outcome": outcome}
            )
        if self._opened is not None:
            if self.span is not None and kind is not None:
                self.span.set_attribute("error.type", kind.__name__)
            self._opened.__exit__(kind, error, traceback)

    def decision(self, event: dict[str, Any], effect: str, detail: dict[str, Any]) -> None:
        """The call's (first) decision record: on the span and in the metrics."""
        if self.decided:
            return
        self.decided = True
        rules = [str(r.get("rule_id")) for r in detail.get("reasons", ()) if isinstance(r, dict)]
        if self.instruments is not None:
            self.instruments.decided(self.tool, effect, rules, time.perf_counter() - self.started)
        if self.span is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.tool.call.id": str(event.get("call_id", "")),
            "agentcore.gateway.tool": self.tool,
            "agentcore.policy.decision": effect,
            "agentcore.policy.determining_rules": rules,
            "agentcore.policy.bundle_hash": str(event.get("bundle_hash", "")),
        }
        if detail.get("approval_id"):
            attributes["agentcore.policy.approval_id"] = str(detail["approval_id"])
        if detail.get("error"):
            attributes["agentcore.policy.error"] = str(detail["error"])[:500]
        if capture_content() and isinstance(detail.get("args"), dict):
            attributes["gen_ai.tool.call.arguments"] = canonical.dumps(detail["args"])
        self.span.set_attributes(attributes)

    def outcome(self, outcome: str, result: Any) -> None:
        if self.span is None:
            return
        self.span.set_attribute("agentcore.gateway.outcome", outcome)
        if capture_content():
            self.span.set_attribute("gen_ai.tool.call.result", _as_json(result))


class GatewayTelemetry:
    """Where one gateway's spans and metrics go: the given providers, or the global ones (looked up per call)."""

    def __init__(
        self, tracer_provider: trace.TracerProvider | None = None, meter_provider: metrics.MeterProvider | None = None
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider

    def tool_call(self, tool: str, session: Any) -> ToolCallTelemetry | None:
        """The telemetry of a new call, or None (nothing to do) while neither traces nor metrics are configured."""
        spans, instruments = tracer(SCOPE, self.tracer_provider), gateway_metrics(self.meter_provider)
        if spans is None and instruments is None:
            return None
        return ToolCallTelemetry(spans, instruments, tool, session)

    def audit_written(self, seconds: float, ok: bool) -> None:
        instruments = gateway_metrics(self.meter_provider)
        if instruments is None:
            return
        if ok:
            instruments.audit_write_duration.record(seconds)
        else:
            instruments.audit_write_failures.add(1)


def _as_json(value: Any) -> str:
    """A tool's (redacted) result as JSON text; any Python value, however odd, gets a text."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # circular or NaN-keyed: still say what it was
        return repr(value)[:2000]


def current_call() -> ToolCallTelemetry | None:
    """The telemetry of the call this code runs in (threads started by ``asyncio.to_thread`` inherit it)."""
    return _current.get()
