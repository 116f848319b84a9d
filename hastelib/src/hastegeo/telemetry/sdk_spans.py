"""The Azure SDK's spans, the same ones for less: azure-core's OpenTelemetry plugin, started leaner.

azure-core traces every SDK call through a plugin (``settings.tracing_implementation``).
The stock one, ``azure.core.tracing.ext.opentelemetry_span.OpenTelemetrySpan``, costs a
storage call about 50 µs of CPU traced against 5 µs untraced (docs/adr/0012), and the
pipeline makes some 30 of them a job. Most of that is not the span the trace keeps:

- *The call's inner spans.* A client method (``BlobClient.upload_blob``) calls a
  generated operation that is traced as well; the stock plugin starts it, finds the
  outer span suppresses it, and returns a span that records nothing: two plugin
  objects and two trips through the decorator for one span. azure-core's own native
  tracing skips such calls at the decorator (its ``_in_span_context`` flag); this
  plugin sets the same flag while its span is current, so they are skipped here too.
- *Four copies of the context* to enter a span (one per value set), where one will do.
- *Per span*, a schema lookup and a tracer lookup whose answers never change.

Everything the trace holds stays as the stock plugin makes it: the same span names,
kinds, attributes, scope, parents, error status and ``traceparent`` header (the test
compares the two through real SDK calls). Links and an explicit parent context, which
the storage SDK never passes, take the stock path unchanged.
"""

from __future__ import annotations

from contextvars import Token
from types import TracebackType
from typing import Any

from azure.core.tracing import SpanKind
from azure.core.tracing.decorator import _in_span_context
from azure.core.tracing.ext import opentelemetry_span as stock
from azure.core.tracing.ext.opentelemetry_span._schema import OpenTelemetrySchema, OpenTelemetrySchemaVersion
from opentelemetry import context, trace
from opentelemetry.trace import NonRecordingSpan
from opentelemetry.trace import SpanKind as OtelSpanKind

# The stock plugin's own names and values, so both read and set the same context keys and scope.
_SUPPRESSED_SPAN_FLAG = stock._SUPPRESSED_SPAN_FLAG
_SUPPRESS_HTTP_INSTRUMENTATION_KEY = stock._SUPPRESS_HTTP_INSTRUMENTATION_KEY  # type: ignore[attr-defined]
_LAST_UNSUPPRESSED_SPAN = stock._LAST_UNSUPPRESSED_SPAN
_SPAN_KIND_MAPPINGS = stock._SPAN_KIND_MAPPINGS
_PLUGIN_SCOPE, _PLUGIN_VERSION = stock.__name__, stock.__version__
_SCHEMA = OpenTelemetrySchemaVersion.V1_23_1
_SCHEMA_URL = OpenTelemetrySchema.get_schema_url(_SCHEMA)
_ATTRIBUTE_MAPPINGS = OpenTelemetrySchema.get_attribute_mappings(_SCHEMA)
# The kinds under which the stock plugin suppresses nested spans and HTTP auto-instrumentation.
_SUPPRESSING = (SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.PRODUCER)


class SdkSpan(stock.OpenTelemetrySpan):
    """azure-core's OpenTelemetry span, the same span, started and entered for less (module docstring)."""

    def __init__(
        self,
        span: trace.Span | None = None,
        name: str | None = "span",
        *,
        kind: SpanKind | None = None,
        links: list[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._entered: Token[Any] | None = None
        self._in_sdk_call: Token[bool] | None = None
        if span is not None or links or kwargs:
            super().__init__(span, name, kind=kind, links=links, **kwargs)
            return
        self._current_ctxt_manager = None
        self._schema_version = _SCHEMA
        self._attribute_mappings = _ATTRIBUTE_MAPPINGS
        otel_kind = _SPAN_KIND_MAPPINGS.get(kind)  # type: ignore[arg-type]  # None maps to None, as in the stock plugin
        if kind and otel_kind is None:
            raise ValueError(f"Kind {kind} is not supported in OpenTelemetry")
        if otel_kind == OtelSpanKind.INTERNAL and context.get_value(_SUPPRESSED_SPAN_FLAG):
            self._span_instance = NonRecordingSpan(context=trace.get_current_span().get_span_context())
            return
        tracer = trace.get_tracer(_PLUGIN_SCOPE, _PLUGIN_VERSION, schema_url=_SCHEMA_URL)
        self._span_instance = tracer.start_span(name=name, kind=otel_kind)  # type: ignore[arg-type]  # as the stock plugin

    def __enter__(self) -> SdkSpan:
        span = self._span_instance
        if not isinstance(span, NonRecordingSpan):
            values = dict(context.get_current())
            if self.kind in _SUPPRESSING:
                values[_SUPPRESSED_SPAN_FLAG] = True
                values[_SUPPRESS_HTTP_INSTRUMENTATION_KEY] = True
            values[_LAST_UNSUPPRESSED_SPAN] = self
            self._entered = context.attach(trace.set_span_in_context(span, context.Context(values)))
        # While this span is current, a traced SDK method it calls is not traced again (azure-core's native rule).
        self._in_sdk_call = _in_span_context.set(True)
        return self

    def __exit__(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exception_type is not None:  # the error's attribute and status, then ended (no context manager of its own)
            super().__exit__(exception_type, exception_value, traceback)
        else:
            self._span_instance.end()
        if self._in_sdk_call is not None:
            _in_span_context.reset(self._in_sdk_call)
            self._in_sdk_call = None
        if self._entered is not None:
            context.detach(self._entered)
            self._entered = None
