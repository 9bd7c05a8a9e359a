"""Install OpenTelemetry SDK providers from the standard ``OTEL_*`` variables, once per process.

Nothing is installed (and nothing exported) unless asked: ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER``
(``otlp``, ``console``, ``prometheus`` for metrics, ``none``; comma-separated) or, when those are unset, an OTLP
endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or the per-signal ``..._TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT``).
The exporters read the rest (endpoint, headers, timeout, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``)
themselves. ``OTEL_SDK_DISABLED=true`` turns it all off. Providers an application installed first are left alone.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from opentelemetry import metrics, trace

from agentcore.accel.telemetry import meter, tracer
from agentcore.errors import ConfigError

log = logging.getLogger(__name__)
_lock = threading.Lock()
_done: set[str] = set()
_EXTRA = "pip install 'agentcore-governance[otel]'"
_SIGNAL_EXPORTERS = {"traces": ("otlp", "console", "none"), "metrics": ("otlp", "console", "prometheus", "none")}


def requested(signal: str) -> list[str]:
    """The exporters the environment asks for ``signal`` ("traces" or "metrics"); [] when none."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    raw = os.environ.get(f"OTEL_{signal.upper()}_EXPORTER")
    if raw is None:
        endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
        return ["otlp"] if any(os.environ.get(name) for name in endpoints) else []
    names = [name.strip().lower() for name in raw.split(",") if name.strip()]
    unknown = [name for name in names if name not in _SIGNAL_EXPORTERS[signal]]
    if unknown:
        choices = ", ".join(_SIGNAL_EXPORTERS[signal])
        raise ConfigError(f"OTEL_{signal.upper()}_EXPORTER names {', '.join(unknown)}; agentcore supports {choices}")
    return [name for name in names if name != "none"]


def configure_from_env(*, prometheus: bool = False) -> None:
    """Install the providers the environment asks for (``prometheus``: also a Prometheus metrics reader)."""
    with _lock:
        if "traces" not in _done:
            _done.add("traces")
            wanted = requested("traces")
            if wanted and tracer("agentcore.gateway") is None:
                trace.set_tracer_provider(_tracer_provider(wanted))
        if "metrics" not in _done or (prometheus and "prometheus" not in _done):
            _done.add("metrics")
            wanted = requested("metrics") + (["prometheus"] if prometheus else [])
            if "prometheus" in wanted:
                _done.add("prometheus")
            if wanted and meter("agentcore.gateway") is None:
                metrics.set_meter_provider(_meter_provider(sorted(set(wanted))))
            elif prometheus:
                log.warning("a meter provider was installed before --metrics: /metrics shows only what it exports")


def _check_protocol(signal: str) -> None:
    protocol = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    if protocol != "http/protobuf":
        raise ConfigError(f"OTLP protocol {protocol!r} is not supported; agentcore exports http/protobuf")


def _tracer_provider(exporters: list[str]) -> Any:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ModuleNotFoundError as error:
        raise ConfigError(f"OTEL_TRACES_EXPORTER needs the OpenTelemetry SDK ({error.name}): {_EXTRA}") from None
    provider = TracerProvider(resource=Resource.create())
    for name in exporters:
        if name == "otlp":
            _check_protocol("traces")
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        else:
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    log.info("OpenTelemetry traces export to %s", ", ".join(exporters))
    return provider


def _meter_provider(exporters: list[str]) -> Any:
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricReader, PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
    except ModuleNotFoundError as error:
        raise ConfigError(f"OTEL_METRICS_EXPORTER needs the OpenTelemetry SDK ({error.name}): {_EXTRA}") from None
    readers: list[MetricReader] = []
    for name in exporters:
        if name == "otlp":
            _check_protocol("metrics")
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
        elif name == "prometheus":
            try:
                from opentelemetry.exporter.prometheus import PrometheusMetricReader
            except ModuleNotFoundError as error:
                raise ConfigError(f"Prometheus metrics need {error.name}: {_EXTRA}") from None
            readers.append(PrometheusMetricReader())
        else:
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
    log.info("OpenTelemetry metrics export to %s", ", ".join(exporters))
    return MeterProvider(metric_readers=readers, resource=Resource.create())
