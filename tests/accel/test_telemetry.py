"""Inference and memory retrieval spans and the simulated-spend counters, under a global SDK provider.

The global OpenTelemetry providers can be installed once per process, so the instrumented work runs in a child
process that installs in-memory ones and prints what they recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, sys
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

from agentcore import Accelerator
from agentcore.memory import MemoryStore

store = MemoryStore("sqlite:///" + sys.argv[1], accelerator=Accelerator(ledger=None), tenant="acme")
store.add_record("u1", "/prefs", "Prefers window seats on long flights.")
store.retrieve("u1", "seat preference", namespace="/prefs")
points = {}
for resource in reader.get_metrics_data().resource_metrics:
    for scope in resource.scope_metrics:
        for metric in scope.metrics:
            points[metric.name] = [[dict(p.attributes), p.value] for p in metric.data.data_points]
print(json.dumps({"spans": [[s.name, dict(s.attributes)] for s in spans.get_finished_spans()], "metrics": points}))
"""


def _run(tmp_path: Path, **env: str) -> dict[str, object]:
    merged = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "m.db")], env=merged, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_inference_and_retrieval_spans_and_simulated_spend(tmp_path: Path) -> None:
    seen = _run(tmp_path)
    names = [name for name, _ in seen["spans"]]  # type: ignore[union-attr]
    assert names.count("accel.infer all-MiniLM-L6-v2") >= 2, names  # the record's embedding, then the query's
    assert names[-1] == "retrieval memory"
    infer = dict(seen["spans"])["accel.infer all-MiniLM-L6-v2"]  # type: ignore[call-overload]
    assert infer["agentcore.accel.tenant"] == "acme" and infer["agentcore.accel.simulated.device_seconds"] > 0
    retrieval = seen["spans"][-1][1]  # type: ignore[index]
    assert retrieval["openinference.span.kind"] == "RETRIEVER" and retrieval["agentcore.memory.hits"] == 1
    assert "input.value" not in retrieval, "the query is content: only with capture on"
    metrics = seen["metrics"]
    (device,) = metrics["agentcore.accel.simulated.device_seconds"]  # type: ignore[index]
    assert device[0]["tenant"] == "acme" and device[1] > 0
    (usd,) = metrics["agentcore.accel.simulated.cost"]  # type: ignore[index]
    assert usd[1] > 0


def test_retrieval_content_is_captured_only_when_asked(tmp_path: Path) -> None:
    seen = _run(tmp_path, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    retrieval = seen["spans"][-1][1]  # type: ignore[index]
    assert retrieval["input.value"] == "seat preference"
    assert retrieval["retrieval.documents.0.document.content"] == "Prefers window seats on long flights."


def test_each_provider_records_into_its_own_pipeline_and_its_cache_entry_goes_with_it() -> None:
    """Tracers and meters are cached per provider object, never by ``id()``: an id is reused once its object is
    collected, and a meter does not keep its provider alive, so an id-keyed cache could hand a new provider a dead
    one's meter. Each round's providers record into their own exporter and reader, and a collected meter provider
    leaves nothing in the cache."""
    import gc

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentcore.accel import telemetry

    for _ in range(5):
        spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
        traces, meters = TracerProvider(), MeterProvider(metric_readers=[reader])
        traces.add_span_processor(SimpleSpanProcessor(spans))
        found, counters = telemetry.tracer("agentcore.test", traces), telemetry.meter("agentcore.test", meters)
        assert found is not None and counters is not None
        found.start_span("probe").end()
        counters.create_counter("probe").add(1)
        assert [span.name for span in spans.get_finished_spans()] == ["probe"]
        data = reader.get_metrics_data()
        assert data is not None
        assert [m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics] == ["probe"]
        assert traces in telemetry._tracers and meters in telemetry._meters
        meters.shutdown()
        del traces, meters, found, counters, spans, reader, data
        gc.collect()
        assert len(telemetry._meters) == 0  # (an SDK tracer refers to its provider, so its entry lives as long)
