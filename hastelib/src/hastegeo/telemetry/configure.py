"""Install the OpenTelemetry SDK for this process, as ``HASTE_OTEL_EXPORT`` says (once per process).

- ``off`` (the default): nothing is installed; the API's no-op tracer and meter remain.
- ``console``: spans and metrics as JSON lines on standard error.
- ``file:PATH``: the same lines appended to ``PATH`` (``haste trace <job-id>`` reads it).
- ``azure``: the Azure Monitor distro sends traces, metrics and logs to Application
  Insights (``APPLICATIONINSIGHTS_CONNECTION_STRING``), authenticated with the app's
  managed identity (Entra, no instrumentation key).

Every mode but ``off`` sets azure-core's tracing plugin to OpenTelemetry, so Batch,
Azure ML and storage calls appear as child spans of the step that made them.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)
SERVICE_NAME = "haste-compute"
_lock = threading.Lock()
_configured: str | None = None


def parse_export(value: str) -> tuple[str, Path | None]:
    """``(mode, path)`` from a ``HASTE_OTEL_EXPORT`` value.

    Raises:
        ValueError: the value is none of ``off``, ``console``, ``azure``, ``file:PATH``.
    """
    value = value.strip()
    if value in ("", "off", "console", "azure"):
        return value or "off", None
    if value.startswith("file:") and value[5:].strip():
        return "file", Path(value[5:].strip())
    raise ValueError(f"{value!r}: choose off, console, azure or file:PATH")


def configure_telemetry(export: str, *, metric_interval_s: float = 1.0) -> str:
    """Install exporters for ``export`` unless this process already did; returns the mode in force."""
    global _configured
    from hastegeo.telemetry.logs import quiet_expected_sdk_noise

    quiet_expected_sdk_noise()
    mode, path = parse_export(export)
    with _lock:
        if _configured is not None or mode == "off":
            return _configured or "off"
        if mode == "azure":
            _azure()
        else:
            _json_lines(path, metric_interval_s)
        from azure.core.settings import settings as azure_settings

        azure_settings.tracing_implementation = "opentelemetry"
        _configured = mode
    log.info("telemetry: exporting to %s", export)
    return mode


def _json_lines(path: Path | None, metric_interval_s: float) -> None:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased

    from hastegeo.telemetry.export import (
        JsonLines,
        JsonLinesLogHandler,
        JsonLinesMetricExporter,
        JsonLinesSpanExporter,
        StepRoots,
    )

    sink = JsonLines(path if path is not None else sys.stderr)
    resource = Resource.create({"service.name": SERVICE_NAME})
    tracer_provider = TracerProvider(resource=resource, sampler=ParentBased(root=StepRoots()))
    tracer_provider.add_span_processor(BatchSpanProcessor(JsonLinesSpanExporter(sink), schedule_delay_millis=500))
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(
        JsonLinesMetricExporter(sink), export_interval_millis=int(metric_interval_s * 1000)
    )
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))
    logging.getLogger("hastegeo").addHandler(JsonLinesLogHandler(sink))


def _azure() -> None:
    from azure.identity import DefaultAzureCredential
    from azure.monitor.opentelemetry import configure_azure_monitor

    # The managed identity (AZURE_CLIENT_ID names the user-assigned one); local
    # authentication is disabled on the App Insights resource.
    configure_azure_monitor(credential=DefaultAzureCredential(), logger_name="hastegeo")


def flush_telemetry(timeout_s: float = 5.0) -> None:
    """Export what is buffered now (the development host calls this on shutdown, tests before reading)."""
    from opentelemetry import metrics, trace

    millis = int(timeout_s * 1000)
    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        force_flush = getattr(provider, "force_flush", None)
        if force_flush is not None:
            force_flush(millis)
