"""OTLP protobuf export requests as OTLP/JSON (the encoding of the OTLP spec: camelCase, hex trace and span ids)."""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

_IDS = ("traceId", "spanId", "parentSpanId")


def otlp_json(request: Message) -> dict[str, Any]:
    """What an OpenTelemetry Collector's file exporter writes for ``request`` (an ExportTraceServiceRequest)."""
    data = MessageToDict(request)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in _IDS:
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return data
