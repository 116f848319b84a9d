"""Traces, metrics and structured logs for the pipeline (docs/adr/0012).

The pipeline talks only to the OpenTelemetry *API* (:mod:`.tracer`,
:mod:`.meter`, :mod:`.logs`), which does nothing until :func:`.configure.configure_telemetry`
installs an SDK. Telemetry is therefore off, and nearly free, unless
``HASTE_OTEL_EXPORT`` asks for it; the workload launcher
(``python -m hastegeo.workloads.*``) imports none of this.
"""
