"""Install the OpenTelemetry SDK for this process, as ``HASTE_OTEL_EXPORT`` says (once per process).

- ``off`` (the default): nothing is installed; the API's no-op tracer and meter remain.
- ``console``: spans and metrics as JSON lines on standard error.
- ``file:PATH``: the same lines appended to ``PATH`` (``haste trace <job-id>`` reads it).
- ``azure``: the Azure Monitor distro sends traces, metrics and logs to Application
  Insights (``APPLICATIONINSIGHTS_CONNECTION_STRING``), authenticated with the app's
  managed identity (Entra, no instrumentation key).

Every mode but ``off`` sets azure-core's tracing plugin to OpenTelemetry, so Batch,
Azure ML and storage calls appear as child spans of the step that made them. A
storage call is one span, without its HTTP request's (:mod:`.sampling`).
``OTEL_TRACES_SAMPLER`` (and ``_ARG``) choose which jobs are traced: every one by
default in the file and console modes; the Azure Monitor distro reads them itself.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hastegeo.settings.app import parse_export
from hastegeo.utils.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

log = logging.getLogger(__name__)
SERVICE_NAME = "haste-compute"
_lock = threading.Lock()
_configured: str | None = None
# Spans wait at most this long before they are written, in batches of up to EXPORT_BATCH; a queue of
# SPAN_QUEUE bounds the memory a stalled exporter can take (spans past it are dropped, not the step).
# 5 s is the SDK's default and what the Azure Monitor distro uses; every second cost each process a
# wake-up and a write whether or not a job ran (docs/adr/0012).
EXPORT_DELAY_MS = 5000
EXPORT_BATCH = 512
SPAN_QUEUE = 4096
# Metrics are cumulative, so how often they are written changes only how fresh the file is. The
# standard variable decides, as it does for the Azure Monitor distro; unset, both write every 60 s
# (the SDK's default), and each process writes its totals once more when it stops.
METRIC_INTERVAL_VARIABLE = "OTEL_METRIC_EXPORT_INTERVAL"
DEFAULT_METRIC_INTERVAL_MS = 60_000


def metric_interval_ms(environ: Mapping[str, str]) -> int:
    """Milliseconds between metric exports in the file and console modes, from ``OTEL_METRIC_EXPORT_INTERVAL`` (pure).

    Raises:
        ConfigurationError: the variable is set but is not a whole number of milliseconds above 0.
    """
    raw = environ.get(METRIC_INTERVAL_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_METRIC_INTERVAL_MS
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigurationError(f"{METRIC_INTERVAL_VARIABLE}={raw!r}: milliseconds between metric exports, above 0")
    return int(raw)


def configure_telemetry(export: str) -> str:
    """Install exporters for ``export`` unless this process already did; returns the mode in force.

    Raises:
        ConfigurationError: ``OTEL_TRACES_SAMPLER`` or its argument, or ``OTEL_METRIC_EXPORT_INTERVAL``, is not
            one the file and console modes know.
    """
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
            _json_lines(path)
        from azure.core.settings import settings as azure_settings

        from hastegeo.telemetry.sdk_spans import SdkSpan

        azure_settings.tracing_implementation = SdkSpan
        _configured = mode
    log.info("telemetry: exporting to %s", export)
    return mode


def _json_lines(path: Path | None) -> None:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from hastegeo.telemetry.export import JsonLines, JsonLinesLogHandler, JsonLinesMetricExporter, JsonLinesSpanExporter
    from hastegeo.telemetry.sampling import pipeline_sampler

    sampler = pipeline_sampler(os.environ)  # first: a bad OTEL_TRACES_SAMPLER installs nothing
    interval_ms = metric_interval_ms(os.environ)
    sink = JsonLines(path if path is not None else sys.stderr)
    resource = Resource.create({"service.name": SERVICE_NAME})
    tracer_provider = TracerProvider(resource=resource, sampler=sampler)
    processor = BatchSpanProcessor(
        JsonLinesSpanExporter(sink, report_cost=path is not None),
        max_queue_size=SPAN_QUEUE,
        schedule_delay_millis=EXPORT_DELAY_MS,
        max_export_batch_size=EXPORT_BATCH,
    )
    tracer_provider.add_span_processor(processor)
    cache_tracers(tracer_provider)
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(JsonLinesMetricExporter(sink), export_interval_millis=interval_ms)
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))
    logging.getLogger("hastegeo").addHandler(JsonLinesLogHandler(sink))


def _azure() -> None:
    from azure.identity import DefaultAzureCredential
    from azure.monitor.opentelemetry import configure_azure_monitor
    from opentelemetry import trace

    from hastegeo.telemetry.sampling import QuietStorageHttp

    # The managed identity (AZURE_CLIENT_ID names the user-assigned one); local
    # authentication is disabled on the App Insights resource.
    configure_azure_monitor(credential=DefaultAzureCredential(), logger_name="hastegeo")
    # The distro's handler on "hastegeo" sends each record once. Propagating it to the root logger
    # as well hands it to the Functions worker's handler, which forwards it to the host, which
    # exports it a second time (two rows in `traces` for one record; docs/adr/0020).
    logging.getLogger("hastegeo").propagate = False
    # That handler sees a record before, and now instead of, the root's handlers and their redacting
    # filter (function_app.py): it needs its own, or a signed URL in a message reaches `traces` whole.
    from hastegeo.utils.redaction import install_redacting_filter

    install_redacting_filter(logging.getLogger("hastegeo"))
    # The distro's sampler (OTEL_TRACES_SAMPLER) decides, but a storage call's HTTP request is no
    # dependency row of its own: the SDK call's row already says it (docs/adr/0012).
    provider = trace.get_tracer_provider()
    sampler = getattr(provider, "sampler", None)
    if sampler is not None:
        provider.sampler = QuietStorageHttp(sampler)  # type: ignore[attr-defined]
    cache_tracers(provider)


def cache_tracers(provider: TracerProvider) -> None:
    """Make ``provider.get_tracer`` a dictionary lookup for the arguments it has seen before.

    azure-core's OpenTelemetry plugin asks for its tracer at every span it starts
    (each storage call); the SDK answers by building two scope objects and
    re-installing a warnings filter every time, only to return the tracer it
    cached for that scope. That cost as much CPU as the rest of the storage
    span (docs/adr/0012); the lookup returns the same tracer for much less.
    """
    original = provider.get_tracer
    tracers: dict[tuple[str, str | None, str | None], Tracer] = {}

    def get_tracer(
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> Tracer:
        if attributes:
            return original(instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        key = (instrumenting_module_name, instrumenting_library_version, schema_url)
        tracer = tracers.get(key)
        if tracer is None:
            tracer = tracers[key] = original(*key)
        return tracer

    provider.get_tracer = get_tracer  # type: ignore[method-assign]


def flush_telemetry(timeout_s: float = 5.0) -> None:
    """Export what is buffered now (the development host calls this on shutdown, tests before reading)."""
    from opentelemetry import metrics, trace

    millis = int(timeout_s * 1000)
    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        force_flush = getattr(provider, "force_flush", None)
        if force_flush is not None:
            force_flush(millis)
