"""OpenTelemetry: a tracer and a meter set up in the app factory; OTLP/HTTP export when configured.

Message content goes on spans only when the tenant's ``trace_llm_content`` is
true (``content_allowed``); logs never hold content.
"""

from __future__ import annotations

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from hango.config import Config

_configured = False


def setup(config: Config) -> None:
    """Install hango's tracer and meter providers once per process (tests install their own first)."""
    global _configured
    if _configured or isinstance(trace.get_tracer_provider(), TracerProvider):
        _configured = True
        return
    resource = Resource.create({"service.name": "hango"})
    provider = TracerProvider(resource=resource)
    readers = []
    if config.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))
    _configured = True


def tracer() -> trace.Tracer:
    return trace.get_tracer("hango")


def meter() -> metrics.Meter:
    return metrics.get_meter("hango")
