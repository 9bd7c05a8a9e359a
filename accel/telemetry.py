"""OpenTelemetry hooks shared by the library: off (one global lookup) until an SDK provider is installed.

The OpenTelemetry API hands out no-op tracers and meters while no SDK is configured, yet building spans and
attribute dicts for them still costs time on every call. :func:`tracer` and :func:`meter` return ``None`` then,
so instrumented code skips that work; they look the global providers up on each call, so a provider installed
after startup (by :func:`agentcore.gateway.otel_setup.configure_from_env` or the application) is honoured.
Simulated figures are named ``*.simulated.*``: they come from the device model, not from hardware.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry import metrics, trace

if TYPE_CHECKING:
    from agentcore.accel.runtime import Receipt

try:  # the API keeps the installed providers in module globals (None until one is set)
    from opentelemetry.metrics import _internal as _metrics_state

    _GLOBALS = hasattr(trace, "_TRACER_PROVIDER") and hasattr(_metrics_state, "_METER_PROVIDER")
except ImportError:  # pragma: no cover - a future API moves them: fall back to the public getters
    _GLOBALS = False
trace.get_tracer_provider(), metrics.get_meter_provider()  # honour OTEL_PYTHON_*_PROVIDER once, at import


def _global_tracer_provider() -> trace.TracerProvider | None:
    """The installed global tracer provider or None. ``get_tracer_provider()`` looks the environment up (a raised
    and caught KeyError) on every call while none is installed: microseconds per tool call; this reads the global."""
    if _GLOBALS:
        return getattr(trace, "_TRACER_PROVIDER", None)
    provider = trace.get_tracer_provider()
    return None if isinstance(provider, trace.ProxyTracerProvider) else provider


def _global_meter_provider() -> metrics.MeterProvider | None:
    if _GLOBALS:
        return getattr(_metrics_state, "_METER_PROVIDER", None)
    provider = metrics.get_meter_provider()
    return None if type(provider).__name__ == "_ProxyMeterProvider" else provider


VERSION = "1"
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"  # the GenAI instrumentations' content switch
K = TypeVar("K")
V = TypeVar("V")


def per_object(cache: weakref.WeakKeyDictionary[K, V], owner: K, make: Callable[[K], V]) -> V:
    """``make(owner)``, made once per live ``owner``: keyed by the object itself, never by ``id()``, which a new
    provider may reuse once an old one is collected, and the entry goes with its owner."""
    found = cache.get(owner)
    if found is None:
        found = cache[owner] = make(owner)
    return found


_tracers: weakref.WeakKeyDictionary[trace.TracerProvider, dict[str, trace.Tracer]] = weakref.WeakKeyDictionary()
_meters: weakref.WeakKeyDictionary[metrics.MeterProvider, dict[str, metrics.Meter]] = weakref.WeakKeyDictionary()


def tracer(name: str, provider: trace.TracerProvider | None = None) -> trace.Tracer | None:
    """The tracer ``name`` of ``provider`` (default the global one), or None while no SDK tracer is installed."""
    provider = provider or _global_tracer_provider()
    if provider is None or isinstance(provider, trace.NoOpTracerProvider):
        return None
    named = per_object(_tracers, provider, lambda _: {})
    found = named.get(name)
    if found is None:
        found = named[name] = provider.get_tracer(name, VERSION)
    return found


def meter(name: str, provider: metrics.MeterProvider | None = None) -> metrics.Meter | None:
    """The meter ``name`` of ``provider`` (default the global one), or None while no SDK meter is installed."""
    provider = provider or _global_meter_provider()
    if provider is None or isinstance(provider, metrics.NoOpMeterProvider):
        return None
    named = per_object(_meters, provider, lambda _: {})
    found = named.get(name)
    if found is None:
        found = named[name] = provider.get_meter(name, VERSION)
    return found


def capture_content() -> bool:
    """Whether spans may carry arguments, results and queries (personal data): only when asked for."""
    return os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"


def finished_span(spans: trace.Tracer, name: str, started_ns: int, attributes: Callable[[], dict[str, Any]]) -> None:
    """Record a span for work that ran from ``started_ns`` until now, a child of the current span; ``attributes``
    are built only when the span records (a sampler may have dropped it)."""
    span = spans.start_span(name, start_time=started_ns)
    if span.is_recording():
        span.set_attributes(attributes())
    span.end()


def record_retrieval(started_ns: int, namespace: str | None, query: str, hits: list[tuple[str, float]]) -> None:
    """A retrieval span (GenAI ``retrieval``, OpenInference ``RETRIEVER``); the query and documents are content."""
    spans = tracer("agentcore.memory")
    if spans is None:
        return

    def attributes() -> dict[str, Any]:
        found: dict[str, Any] = {
            "gen_ai.operation.name": "retrieval",
            "openinference.span.kind": "RETRIEVER",
            "agentcore.memory.namespace": namespace or "",
            "agentcore.memory.hits": len(hits),
        }
        if capture_content():
            found["input.value"] = query
            for index, (text, score) in enumerate(hits):
                found[f"retrieval.documents.{index}.document.content"] = text
                found[f"retrieval.documents.{index}.document.score"] = score
        return found

    finished_span(spans, "retrieval memory", started_ns, attributes)


class _AccelInstruments:
    def __init__(self, meter: metrics.Meter) -> None:
        self.device_seconds = meter.create_counter(
            "agentcore.accel.simulated.device_seconds", unit="s", description="simulated NeuronCore seconds charged"
        )
        self.usd = meter.create_counter(
            "agentcore.accel.simulated.cost", unit="USD", description="simulated dollars charged"
        )


_instruments: weakref.WeakKeyDictionary[metrics.Meter, _AccelInstruments] = weakref.WeakKeyDictionary()


def record_receipt(receipt: Receipt) -> None:
    """A span for the finished inference (backdated by its CPU time) and the simulated spend by tenant."""
    spans, counters = tracer("agentcore.accel"), meter("agentcore.accel")
    if spans is not None:
        finished_span(
            spans,
            f"accel.infer {receipt.model}",
            time.time_ns() - int(receipt.cpu_seconds * 1e9),
            lambda: {
                "gen_ai.request.model": receipt.model,
                "agentcore.accel.variant": receipt.variant,
                "agentcore.accel.profile": receipt.profile or "",
                "agentcore.accel.items": receipt.items,
                "agentcore.accel.tenant": receipt.tenant,
                "agentcore.accel.simulated.device_seconds": receipt.device_seconds,
                "agentcore.accel.simulated.queue_seconds": receipt.queue_seconds,
                "agentcore.accel.simulated.cost_usd": receipt.usd,
                "agentcore.accel.rejected": receipt.rejected,
            },
        )
    if counters is None:
        return
    instruments = per_object(_instruments, counters, _AccelInstruments)
    labels = {"tenant": receipt.tenant, "profile": receipt.profile or ""}
    instruments.device_seconds.add(receipt.device_seconds, labels)
    instruments.usd.add(receipt.usd, labels)
