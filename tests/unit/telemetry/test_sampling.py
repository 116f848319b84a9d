"""Which spans the file and console modes record: traces start at steps, OTEL_TRACES_SAMPLER picks jobs,
a storage call is one span (its HTTP request's is dropped), a provider call keeps its HTTP span.

Each test builds its own SDK tracer provider with the sampler under test and an in-memory
exporter, so the process-wide provider other tests use is left alone.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from hastegeo.telemetry.sampling import SAMPLER_NAMES, pipeline_sampler
from hastegeo.utils.errors import ConfigurationError

UPSTREAM_SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
UPSTREAM_NOT_SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


@contextmanager
def recorded(environ: Mapping[str, str]) -> Iterator[tuple[Tracer, list[ReadableSpan]]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=pipeline_sampler(environ))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans: list[ReadableSpan] = []
    try:
        yield provider.get_tracer("test"), spans
    finally:
        provider.force_flush()
        spans.extend(exporter.get_finished_spans())
        provider.shutdown()


def a_step_with_calls(tracer: Tracer) -> None:
    """A queue step that makes a storage call and a provider call, each with its HTTP request, as azure-core does."""
    with tracer.start_as_current_span("submit", kind=SpanKind.CONSUMER):
        with tracer.start_as_current_span("ContainerClient.upload_blob"):
            tracer.start_span("PUT", kind=SpanKind.CLIENT).end()
        with tracer.start_as_current_span("QueueClient.send_message"):
            tracer.start_span("POST", kind=SpanKind.CLIENT).end()
        with tracer.start_as_current_span("BatchClient.create_job"):
            tracer.start_span("POST", kind=SpanKind.CLIENT).end()


def test_by_default_every_step_is_traced_and_a_storage_call_is_one_span() -> None:
    with recorded({}) as (tracer, spans):
        a_step_with_calls(tracer)
    by_name = {span.name: span for span in spans}
    calls = {"ContainerClient.upload_blob", "QueueClient.send_message", "BatchClient.create_job"}
    assert set(by_name) == {"submit", "POST", *calls}
    provider_http = [span for span in spans if span.kind is SpanKind.CLIENT]
    assert len(provider_http) == 1  # the provider call's request, not the storage calls' PUT and POST
    assert provider_http[0].parent is not None
    assert provider_http[0].parent.span_id == by_name["BatchClient.create_job"].context.span_id
    step = by_name["submit"].context.span_id
    for name in calls:
        assert by_name[name].parent is not None
        assert by_name[name].parent.span_id == step, name


def test_a_call_outside_any_step_starts_no_trace() -> None:
    with recorded({}) as (tracer, spans):
        with tracer.start_as_current_span("QueueClient.receive_messages"):
            tracer.start_span("GET", kind=SpanKind.CLIENT).end()
        tracer.start_span("BatchClient.get_job").end()
    assert spans == []


@pytest.mark.parametrize(
    ("environ", "traced"),
    [
        ({"OTEL_TRACES_SAMPLER": "parentbased_always_on"}, True),
        ({"OTEL_TRACES_SAMPLER": "always_on"}, True),
        ({"OTEL_TRACES_SAMPLER": "ALWAYS_OFF"}, False),
        ({"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, False),
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1"}, True),
        ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, False),
        ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio"}, True),  # no argument: every job, as the SDK does
    ],
)
def test_otel_traces_sampler_decides_whether_a_job_is_traced(environ: dict[str, str], traced: bool) -> None:
    with recorded(environ) as (tracer, spans):
        a_step_with_calls(tracer)
    assert bool(spans) is traced
    assert all(span.kind is not SpanKind.CLIENT or span.parent is not None for span in spans)


def test_a_ratio_keeps_or_drops_whole_jobs() -> None:
    """Every step of a job decides from the same trace id, so a job's trace is all there or not at all."""
    with recorded({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}) as (
        tracer,
        spans,
    ):
        for _ in range(40):
            with tracer.start_as_current_span("POST /api/jobs", kind=SpanKind.SERVER):
                a_step_with_calls(tracer)
    kept = {span.context.trace_id for span in spans if span.name == "POST /api/jobs"}
    assert 0 < len(kept) < 40  # some jobs traced, some not (P(fail) = 2 * 0.5**40)
    for trace_id in kept:
        assert len([span for span in spans if span.context.trace_id == trace_id]) == 6  # request, step, 3 calls, 1 HTTP
    assert {span.context.trace_id for span in spans} == kept


@pytest.mark.parametrize(
    ("traceparent", "sampler", "traced"),
    [
        (UPSTREAM_SAMPLED, "parentbased_always_on", True),
        (UPSTREAM_NOT_SAMPLED, "parentbased_always_on", False),  # the caller (or the job's request) chose
        (UPSTREAM_NOT_SAMPLED, "always_on", True),  # a plain sampler decides afresh
    ],
)
def test_a_parentbased_sampler_follows_the_messages_traceparent(traceparent: str, sampler: str, traced: bool) -> None:
    message = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    with (
        recorded({"OTEL_TRACES_SAMPLER": sampler}) as (tracer, spans),
        tracer.start_as_current_span("poll", context=message, kind=SpanKind.CONSUMER),
    ):
        tracer.start_span("ContainerClient.download_blob").end()
    assert [span.name for span in spans] == (["ContainerClient.download_blob", "poll"] if traced else [])


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER='sometimes'"),
        ({"OTEL_TRACES_SAMPLER": "microsoft.rate_limited"}, "OTEL_TRACES_SAMPLER"),  # the Azure distro's own
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"}, "OTEL_TRACES_SAMPLER_ARG='half'"),
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"}, "OTEL_TRACES_SAMPLER_ARG='1.5'"),
    ],
)
def test_a_bad_sampler_setting_names_the_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        pipeline_sampler(environ)
    assert named in str(caught.value)
    assert all(name in str(caught.value) for name in SAMPLER_NAMES) or "ratio from 0 to 1" in str(caught.value)


def test_a_bad_sampler_installs_nothing_in_a_fresh_process(tmp_path: object) -> None:
    code = (
        "import os, sys\n"
        "os.environ['OTEL_TRACES_SAMPLER'] = 'sometimes'\n"
        "from opentelemetry import trace\n"
        "from hastegeo.telemetry.configure import configure_telemetry\n"
        "from hastegeo.utils.errors import ConfigurationError\n"
        "try:\n"
        "    configure_telemetry('console')\n"
        "except ConfigurationError as exc:\n"
        "    print(type(trace.get_tracer_provider()).__name__, exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.startswith("ProxyTracerProvider OTEL_TRACES_SAMPLER='sometimes'"), result.stdout


def test_a_dropped_storage_request_keeps_its_parents_trace_state() -> None:
    """Vendors carry state in ``tracestate``; a dropped child must hand it on, not lose it."""
    with recorded({}) as (tracer, spans):
        carrier = {"traceparent": UPSTREAM_SAMPLED, "tracestate": "vendor=kept"}
        context = TraceContextTextMapPropagator().extract(carrier)
        with (
            tracer.start_as_current_span("submit", context=context, kind=SpanKind.CONSUMER),
            tracer.start_as_current_span("BlobClient.upload_blob") as call,
        ):
            dropped = tracer.start_span("PUT", kind=SpanKind.CLIENT)
            dropped.end()
    assert not dropped.is_recording()
    assert dropped.get_span_context().trace_state == call.get_span_context().trace_state
    assert dropped.get_span_context().trace_state.get("vendor") == "kept"
    assert "PUT" not in {span.name for span in spans}
