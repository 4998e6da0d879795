"""A command that traces its own work with the OpenTelemetry Python SDK:
its span's parent is read from TRACEPARENT (and TRACESTATE), as the
environment carrier hands it over, and exported over OTLP/HTTP to
OTEL_EXPORTER_OTLP_ENDPOINT. Exits with its first argument."""

import os
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

carrier = {k.lower(): os.environ[k] for k in ("TRACEPARENT", "TRACESTATE") if os.environ.get(k)}
parent = TraceContextTextMapPropagator().extract(carrier)
provider = TracerProvider(resource=Resource.create({"service.name": "child"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("child")
with tracer.start_as_current_span("child work", context=parent) as span:
    span.set_attribute("child.attempt", os.environ.get("RETRY_ATTEMPT", ""))
provider.shutdown()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
