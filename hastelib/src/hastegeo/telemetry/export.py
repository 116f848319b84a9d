"""Spans and metrics as JSON lines (one OTLP-shaped object a line), for the development host.

A file is easy to read back (``haste trace <job-id>``) and needs no collector.
Each line has ``"signal": "span"``, ``"metric"``, ``"log"`` or ``"export"`` (what
exporting spans has cost the process so far, :func:`export_cost`); ids are hex
as in OTLP/JSON. Metrics are cumulative, so the last line of a metric and
attribute set holds its total. Imported only when ``HASTE_OTEL_EXPORT`` asks for it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class JsonLines:
    """Appends lines to a file or a stream, each batch in one write.

    A file is opened once, for appending (``O_APPEND``), and each batch goes to it
    in a single ``write``, so several processes (the host and its queue workers)
    can share it without interleaving lines. Should the file be removed or
    replaced meanwhile, the next write opens the new one. Opening the file for
    every write instead cost an ``open`` and a ``close`` per batch and per log record
    (docs/adr/0012).
    """

    def __init__(self, target: Path | IO[str]) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._inode: tuple[int, int] | None = None

    def write(self, entries: Sequence[dict[str, Any]]) -> None:
        if not entries:
            return
        text = "".join(json.dumps(entry, default=str) + "\n" for entry in entries)
        with self._lock:
            if isinstance(self._target, Path):
                os.write(self._file(self._target), text.encode("utf-8"))
            else:
                self._target.write(text)
                self._target.flush()

    def _file(self, path: Path) -> int:
        """The descriptor of ``path``, (re)opened when the file there is not the open one (under the lock)."""
        try:
            found = os.stat(path)
            current: tuple[int, int] | None = (found.st_dev, found.st_ino)
        except FileNotFoundError:
            current = None
        if self._fd is None or current != self._inode:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            opened = os.fstat(self._fd)
            self._inode = (opened.st_dev, opened.st_ino)
        return self._fd


class JsonLinesLogHandler(logging.Handler):
    """The app's log records as ``"signal": "log"`` lines beside the spans (redacted, job fields as fields)."""

    def __init__(self, sink: JsonLines) -> None:
        super().__init__(logging.INFO)
        from hastegeo.telemetry.logs import JsonFormatter
        from hastegeo.utils.redaction import RedactingFilter

        self._sink = sink
        self._formatter = JsonFormatter()
        self.setFormatter(self._formatter)
        self.addFilter(RedactingFilter())

    def emit(self, record: logging.LogRecord) -> None:
        try:  # the formatter's fields as they are: rendering them to text and parsing it back cost twice
            self._sink.write([{"signal": "log", **self._formatter.fields(record)}])
        except Exception:  # a log line must never break the step that wrote it
            self.handleError(record)


def span_entry(span: ReadableSpan) -> dict[str, Any]:
    context = span.context
    parent = span.parent
    return {
        "signal": "span",
        "traceId": format(context.trace_id, "032x") if context else None,
        "spanId": format(context.span_id, "016x") if context else None,
        "parentSpanId": format(parent.span_id, "016x") if parent else None,
        "name": span.name,
        "kind": span.kind.name,
        "startTimeUnixNano": span.start_time,
        "endTimeUnixNano": span.end_time,
        "attributes": dict(span.attributes or {}),
        "status": {"code": span.status.status_code.name, "message": span.status.description},
        "links": [format(link.context.trace_id, "032x") for link in span.links],
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
    }


class JsonLinesSpanExporter(SpanExporter):
    """Writes each batch of spans and, with ``report_cost``, this process's running export cost as an ``"export"`` line.

    The cost is the CPU time of the exporting thread (the batch processor's), so
    ``make bench`` can tell what exporting adds apart from recording the spans.
    """

    def __init__(self, sink: JsonLines, *, report_cost: bool = False) -> None:
        self._sink = sink
        self._report_cost = report_cost
        self._spans = 0
        self._cpu_s = 0.0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        began = time.thread_time()
        entries = [span_entry(span) for span in spans]
        self._spans += len(spans)
        if self._report_cost:  # in the batch's own write; its cost is counted from the next batch on
            entries.append({"signal": "export", "pid": os.getpid(), "spans": self._spans, "cpu_s": self._cpu_s})
        self._sink.write(entries)
        self._cpu_s += time.thread_time() - began
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _point(point: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"attributes": dict(point.attributes or {})}
    if isinstance(point, NumberDataPoint):
        entry["value"] = point.value
    elif isinstance(point, HistogramDataPoint):
        entry.update(count=point.count, sum=point.sum, min=point.min, max=point.max)
    return entry


class JsonLinesMetricExporter(MetricExporter):
    def __init__(self, sink: JsonLines) -> None:
        super().__init__()
        self._sink = sink

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        pid = os.getpid()  # each process writes its own totals: a reader adds them up (latest_metrics)
        entries = [
            {
                "signal": "metric",
                "pid": pid,
                "name": metric.name,
                "unit": metric.unit,
                "points": [_point(point) for point in metric.data.data_points],
            }
            for resource in metrics_data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        ]
        self._sink.write(entries)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


def read_trace(path: Path, job_id: str) -> list[dict[str, Any]]:
    """The spans of the trace(s) that hold a span of ``job_id``, in start order."""
    spans = [entry for entry in _lines(path) if entry.get("signal") == "span"]
    traces = {span["traceId"] for span in spans if span["attributes"].get("haste.job_id") == job_id}
    return sorted((span for span in spans if span["traceId"] in traces), key=lambda span: span["startTimeUnixNano"])


def job_logs(path: Path, job_id: str) -> list[dict[str, Any]]:
    """The log lines of ``job_id`` from a JSON lines file, in order."""
    return [entry for entry in _lines(path) if entry.get("signal") == "log" and entry.get("job_id") == job_id]


def latest_metrics(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Each metric's cumulative totals from a JSON lines file: every process's latest points, side by side.

    The development host's processes (the HTTP host, its queue workers) count apart and write
    their own totals to the one file; a metric's total is the sum over its processes' latest points.
    """
    latest: dict[tuple[Any, str], list[dict[str, Any]]] = {}
    for entry in _lines(path):
        if entry.get("signal") == "metric":
            latest[(entry.get("pid"), entry["name"])] = entry["points"]
    merged: dict[str, list[dict[str, Any]]] = {}
    for (_, name), points in latest.items():
        merged.setdefault(name, []).extend(points)
    return merged


def export_cost(path: Path) -> tuple[int, float]:
    """Spans exported and the CPU seconds exporting them took, summed over the processes that wrote ``path``."""
    latest: dict[int, tuple[int, float]] = {}
    for entry in _lines(path):
        if entry.get("signal") == "export":
            latest[int(entry["pid"])] = (int(entry["spans"]), float(entry["cpu_s"]))
    return sum(spans for spans, _ in latest.values()), sum(cpu for _, cpu in latest.values())


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut short by a process that stopped mid-write
            continue
    return entries


def render_trace(spans: list[dict[str, Any]], write: Callable[[str], None]) -> None:
    """Print ``spans`` as an indented tree with durations, attributes of note and failures."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    ids = {span["spanId"] for span in spans}
    for span in spans:
        parent = span["parentSpanId"] if span["parentSpanId"] in ids else None
        children.setdefault(parent, []).append(span)

    def show(span: dict[str, Any], depth: int) -> None:
        took = (span["endTimeUnixNano"] - span["startTimeUnixNano"]) / 1e6
        attrs = span["attributes"]
        where = " ".join(
            f"{key.removeprefix('haste.')}={attrs[key]}"
            for key in ("haste.backend", "haste.state", "haste.poll_seq")
            if key in attrs
        )
        message = (span["status"]["message"] or "").strip().splitlines()
        failed = f"  ERROR: {message[0] if message else ''}" if span["status"]["code"] == "ERROR" else ""
        write(f"{'  ' * depth}{span['name']}  {took:.1f} ms  {where}{failed}")
        for child in children.get(span["spanId"], []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)
