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
from typing import TYPE_CHECKING, Any

from opentelemetry import context, metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode

from agentcore.accel.telemetry import capture_content, tracer
from agentcore.gateway import canonical
from agentcore.gateway.metrics import SCOPE, GatewayMetrics, gateway_metrics

if TYPE_CHECKING:
    from agentcore.gateway.approvals import ApprovalStore

_current: ContextVar[ToolCallTelemetry | None] = ContextVar("agentcore_tool_call", default=None)


class ToolCallTelemetry:
    """One call's span and timings; ``with`` it around the call (sync or async).

    The span is started and made current by hand (``start_span`` and a context token) rather than through
    ``start_as_current_span``, whose two nested generator context managers cost more than the span itself; the
    exception handling is the same (recorded on the span, status ERROR). Attributes beyond the sampler's inputs
    are built only for a recording span.
    """

    __slots__ = (
        "_attached", "_token", "capture", "decided", "instruments", "session", "span", "spans", "started", "tool",
    )  # fmt: skip

    def __init__(self, spans: trace.Tracer | None, instruments: GatewayMetrics | None, tool: str, session: Any) -> None:
        self.spans, self.instruments, self.tool, self.session = spans, instruments, str(tool)[:200], session
        self.decided = self.capture = False
        self.span: trace.Span | None = None
        self._attached: Token[Context] | None = None
        self._token: Token[ToolCallTelemetry | None] | None = None
        self.started = 0.0

    def __enter__(self) -> ToolCallTelemetry:
        self.started = time.perf_counter()
        if self.spans is not None:
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": self.tool}
            if isinstance(self.session, str):
                attributes["gen_ai.conversation.id"] = attributes["session.id"] = self.session
            span = self.span = self.spans.start_span(
                f"execute_tool {self.tool}", kind=trace.SpanKind.INTERNAL, attributes=attributes
            )
            self._attached = context.attach(trace.set_span_in_context(span))
            self.capture = span.is_recording() and capture_content()
        self._token = _current.set(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._token is not None:
            _current.reset(self._token)
        if self.instruments is not None:
            outcome = "ok" if kind is None else kind.__name__
            self.instruments.called(self.tool, outcome, time.perf_counter() - self.started)
        span = self.span
        if span is None:
            return
        if self._attached is not None:
            context.detach(self._attached)
        if kind is not None and span.is_recording():
            span.set_attribute("error.type", kind.__name__)
            if isinstance(error, Exception):  # as use_span does: a BaseException (a cancellation) is no error
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, f"{kind.__name__}: {error}"))
        span.end()

    def decision(self, event: dict[str, Any], effect: str, detail: dict[str, Any]) -> None:
        """The call's (first) decision record: on the span and in the metrics."""
        if self.decided:
            return
        self.decided = True
        rules = [str(r.get("rule_id")) for r in detail.get("reasons", ()) if isinstance(r, dict)]
        if self.instruments is not None:
            self.instruments.decided(self.tool, effect, rules, time.perf_counter() - self.started)
        span = self.span
        if span is None or not span.is_recording():
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
        if self.capture and isinstance(detail.get("args"), dict):
            attributes["gen_ai.tool.call.arguments"] = canonical.dumps(detail["args"])
        span.set_attributes(attributes)

    def outcome(self, outcome: str, result: Any) -> None:
        span = self.span
        if span is None or not span.is_recording():
            return
        span.set_attribute("agentcore.gateway.outcome", outcome)
        if self.capture:
            span.set_attribute("gen_ai.tool.call.result", _as_json(result))


class GatewayTelemetry:
    """Where one gateway's spans and metrics go: the given providers, or the global ones.

    The tracer and the instruments are kept once found: a given provider is fixed, and OpenTelemetry lets a
    global one be set only once per process. Until then each call looks the globals up (a provider installed after
    startup is honoured), which is all a call pays while nothing is configured.
    """

    def __init__(
        self, tracer_provider: trace.TracerProvider | None = None, meter_provider: metrics.MeterProvider | None = None
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self._spans: trace.Tracer | None = None
        self._instruments: GatewayMetrics | None = None
        self._approvals: tuple[str, ApprovalStore] | None = None

    def watch_approvals(self, gateway: str, store: ApprovalStore) -> None:
        """Report ``store``'s pending approvals under ``gateway`` to this gateway's meter, once there is one."""
        self._approvals = (gateway, store)
        if (instruments := self._metrics()) is not None:
            instruments.watch_approvals(gateway, store)  # again if _metrics just did: the same entry

    def _metrics(self) -> GatewayMetrics | None:
        if self._instruments is None:
            self._instruments = gateway_metrics(self.meter_provider)
            if self._instruments is not None and self._approvals is not None:
                self._instruments.watch_approvals(*self._approvals)
        return self._instruments

    def tool_call(self, tool: str, session: Any) -> ToolCallTelemetry | None:
        """The telemetry of a new call, or None (nothing to do) while neither traces nor metrics are configured."""
        spans, instruments = self._spans, self._instruments
        if spans is None:  # inline: while nothing is configured, these lookups are all a call pays
            spans = self._spans = tracer(SCOPE, self.tracer_provider)
        if instruments is None:
            instruments = self._metrics()
        if spans is None and instruments is None:
            return None
        return ToolCallTelemetry(spans, instruments, tool, session)

    def audit_written(self, seconds: float, ok: bool) -> None:
        instruments = self._metrics()
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
