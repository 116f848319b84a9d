"""Turn telemetry on for one test: an SDK tracer and meter that record only while a test asks.

OpenTelemetry's global providers can be set once per process, so the first
test that asks installs them; spans end up in memory only inside
:func:`recording`, and metrics are read as deltas, so telemetry stays off
(spans dropped at once) for every other test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

_lock = threading.Lock()
_installed: tuple[_Collect, InMemoryMetricReader] | None = None


class _Collect(SpanProcessor):
    def __init__(self) -> None:
        self.sink: list[ReadableSpan] | None = None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self.sink is not None:
            self.sink.append(span)


def _install() -> tuple[_Collect, InMemoryMetricReader]:
    global _installed
    with _lock:
        if _installed is None:
            collect, reader = _Collect(), InMemoryMetricReader()
            provider = TracerProvider()
            provider.add_span_processor(collect)
            trace.set_tracer_provider(provider)
            metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
            _installed = (collect, reader)
        return _installed


class Recording:
    def __init__(self, reader: InMemoryMetricReader) -> None:
        self.spans: list[ReadableSpan] = []
        self._reader = reader
        self._before = self._totals()

    def _totals(self) -> dict[tuple[str, tuple[tuple[str, Any], ...]], float]:
        totals: dict[tuple[str, tuple[tuple[str, Any], ...]], float] = {}
        data = self._reader.get_metrics_data()
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        key = (metric.name, tuple(sorted((point.attributes or {}).items())))
                        if isinstance(point, NumberDataPoint):
                            totals[key] = float(point.value)
                        elif isinstance(point, HistogramDataPoint):
                            totals[key] = float(point.count)
        return totals

    def counted(self, name: str, **attributes: Any) -> float:
        """How much ``name`` grew (a counter's sum, a histogram's observations) since recording began."""
        now = self._totals()
        return sum(
            value - self._before.get(key, 0.0)
            for key, value in now.items()
            if key[0] == name and attributes.items() <= dict(key[1]).items()
        )

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name == name]


@contextmanager
def recording() -> Iterator[Recording]:
    collect, reader = _install()
    result = Recording(reader)
    collect.sink = result.spans
    try:
        yield result
    finally:
        collect.sink = None
