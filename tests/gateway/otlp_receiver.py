"""A real OTLP/HTTP receiver process for the telemetry tests: ``python otlp_receiver.py PORT OUT_DIR``.

Accepts ``POST /v1/traces`` and ``/v1/metrics`` (protobuf, as the OpenTelemetry exporters send them), decodes them
with the official ``opentelemetry-proto`` messages and appends each request, as OTLP/JSON, to
``OUT_DIR/traces.jsonl`` / ``metrics.jsonl``. ``GET /ready`` answers once it listens.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import uvicorn
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent))
from otlp_json import otlp_json


def app(out: Path) -> Starlette:
    def append(name: str, data: dict[str, object]) -> None:
        with (out / name).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(data) + "\n")

    async def traces(request: Request) -> Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.body())
        append("traces.jsonl", otlp_json(message))
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")

    async def metrics(request: Request) -> Response:
        message = ExportMetricsServiceRequest()
        message.ParseFromString(await request.body())
        append("metrics.jsonl", MessageToDict(message))
        return Response(ExportMetricsServiceResponse().SerializeToString(), media_type="application/x-protobuf")

    async def ready(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [Route("/v1/traces", traces, methods=["POST"]), Route("/v1/metrics", metrics, methods=["POST"])]
    return Starlette(routes=[*routes, Route("/ready", ready)])


if __name__ == "__main__":
    port, folder = int(sys.argv[1]), Path(sys.argv[2])
    uvicorn.run(app(folder), host="127.0.0.1", port=port, log_level="warning")
