"""OpenTelemetry: a tracer and a meter set up in the app factory; OTLP/HTTP export when configured.

Message content goes on spans only when the tenant's ``trace_llm_content`` is
true (``RunState.trace_content``, see ``hango.agent.chat_span``); logs never hold
content: the provider SDKs quote whole request bodies in their DEBUG records,
so those records are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from hango.config import Config
from hango.telemetry import names

_configured = False

SDK_LOGGER_MODULES = ("_base_client", "_response")  # where the official SDKs log request options


class _DropDebug(logging.Filter):
    """Drops DEBUG records: there the SDKs quote request options (messages, system prompt, tool results)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


_DROP_DEBUG = _DropDebug()


def keep_content_out_of_logs(sdks: Iterable[str]) -> None:
    """Filter the SDK loggers, whatever level a handler or the root logger is set to (idempotent)."""
    for sdk in sdks:
        for module in SDK_LOGGER_MODULES:
            logging.getLogger(f"{sdk}.{module}").addFilter(_DROP_DEBUG)


def setup(config: Config, sdks: Iterable[str] = ()) -> None:
    """Install hango's tracer and meter providers once per process (tests install their own first).

    OpenTelemetry's own conventions: ``OTEL_EXPORTER_OTLP_ENDPOINT`` alone exports traces to
    ``<endpoint>/v1/traces`` and metrics to ``<endpoint>/v1/metrics``; a per-signal
    ``OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`` is that signal's whole URL and wins;
    ``OTEL_{TRACES,METRICS}_EXPORTER=none`` turns a signal off (a trace-only backend such as
    Phoenix takes ``OTEL_METRICS_EXPORTER=none``).
    """
    global _configured
    keep_content_out_of_logs(sdks)
    if _configured or isinstance(trace.get_tracer_provider(), TracerProvider):
        _configured = True
        return
    resource = Resource.create({names.SERVICE_NAME: "hango", names.PROJECT_NAME: config.trace_project})
    provider = TracerProvider(resource=resource)
    traces = signal_url(config.traces_exporter, config.otlp_traces_endpoint, config.otlp_endpoint, "traces")
    if traces:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(traces)))
    readers = []
    metrics_url = signal_url(
        config.metrics_exporter, config.otlp_metrics_endpoint, config.otlp_endpoint, "metrics"
    )
    if metrics_url:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter(metrics_url)))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))
    _configured = True


def signal_url(exporter: str, own: str | None, base: str | None, signal: str) -> str | None:
    """Where one signal is exported, by the OpenTelemetry specification, or None when it is not.

    ``exporter`` is ``OTEL_<SIGNAL>_EXPORTER`` (``none`` turns it off); ``own`` the per-signal
    endpoint, used as it is; else ``base`` with ``/v1/<signal>`` appended.
    """
    if exporter.strip().lower() == "none":
        return None
    if own:
        return own
    return f"{base.rstrip('/')}/v1/{signal}" if base else None


def tracer() -> trace.Tracer:
    return trace.get_tracer("hango")


def meter() -> metrics.Meter:
    return metrics.get_meter("hango")
