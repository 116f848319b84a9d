"""One trace per job: spans for each step, parented through the ``traceparent`` the messages carry.

The job stores the W3C ``traceparent`` of the span that accepted it
(``Job.trace_parent``). A step's span is the child of its message's
``traceparent`` (the submit message, the poll chain), and of the job's own
``traceparent`` when the message has none (a nudge, a message the
reconciler re-sent, a message from the previous version). Whoever sends a
message for a job outside the job's trace (the reconciler, a cancellation)
sends it :func:`within` the job's trace, so every step lands there.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from hastegeo.models.job import Job

TRACER = trace.get_tracer("hastegeo")
INTERNAL = SpanKind.INTERNAL
__all__ = ["Status", "StatusCode"]  # re-exported for callers that set a span status
SERVER = SpanKind.SERVER
_PROPAGATOR = TraceContextTextMapPropagator()

# Attribute names, one place: the workbook and the runbook query these.
JOB_ID = "haste.job_id"
PROJECT = "haste.project"
WORKLOAD = "haste.workload"
BACKEND = "haste.backend"
ATTEMPT = "haste.attempt"
POLL_SEQ = "haste.poll_seq"
STATE = "haste.state"
REASON = "haste.reason"
REASON_CLASS = "haste.reason_class"


def skip_http_span(request: Any) -> None:
    """A storage client's ``raw_request_hook``: tell azure-core's tracing policy to start no HTTP span.

    The hook runs before the tracing policy in the storage SDK's pipeline; the policy
    reads the per-call ``tracing_options``. Were that order to change, the HTTP span
    would still be dropped by the sampler (:class:`.sampling.QuietStorageHttp`), only at its former cost.
    """
    request.context.options["tracing_options"] = {"enabled": False}


# Options for the pipeline's blob and queue clients (``hastegeo.runtime.storage_clients``).
STORAGE_CLIENT_OPTIONS: dict[str, Any] = {"raw_request_hook": skip_http_span}


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span, or None when nothing is being traced."""
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


def _context_of(traceparent: str | None, tracestate: str | None = None) -> otel_context.Context | None:
    if not traceparent:
        return None
    ctx = _PROPAGATOR.extract({"traceparent": traceparent, **({"tracestate": tracestate} if tracestate else {})})
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def trace_id_of(traceparent: str | None) -> str | None:
    """The 32-hex trace id of a ``traceparent``, or None when it is not one."""
    ctx = _context_of(traceparent)
    return None if ctx is None else format(trace.get_current_span(ctx).get_span_context().trace_id, "032x")


def job_attributes(job: Job) -> dict[str, str | int]:
    """What every span and log line of a job carries, so a query can group by it."""
    return {
        JOB_ID: job.id,
        PROJECT: job.project_id,
        WORKLOAD: job.workload,
        BACKEND: job.backend,
        ATTEMPT: job.attempts.submit,
        POLL_SEQ: job.poll_seq,
        STATE: job.state.value,
    }


def annotate(job: Job, span: Span | None = None) -> None:
    """Put ``job``'s attributes on ``span`` (default: the current span)."""
    span = span or trace.get_current_span()
    if span.is_recording():
        span.set_attributes(job_attributes(job))


def fail(reason: str, reason_class: str, span: Span | None = None) -> None:
    """Mark ``span`` (default: the current one) as the failure of its job, with the readable reason."""
    span = span or trace.get_current_span()
    if span.is_recording():
        span.set_attributes({REASON: reason, REASON_CLASS: reason_class})
        span.set_status(Status(StatusCode.ERROR, reason))


@contextmanager
def step_span(
    name: str,
    *,
    traceparent: str | None,
    job_id: str | None = None,
    kind: SpanKind = SpanKind.CONSUMER,
    attributes: Mapping[str, Any] | None = None,
    tracestate: str | None = None,
) -> Iterator[Span]:
    """A span for one step, the child of ``traceparent`` (the message's, or the job's own trace
    that :meth:`hastegeo.pipeline.deps.PipelineDeps.step` found in the read the step needs).
    An exception leaving the block is recorded on the span and re-raised.
    """
    base = {JOB_ID: job_id} if job_id else {}
    with TRACER.start_as_current_span(
        name, context=_context_of(traceparent, tracestate), kind=kind, attributes={**base, **(attributes or {})}
    ) as span:
        yield span


@contextmanager
def within(traceparent: str | None) -> Iterator[None]:
    """Run the block as part of the trace ``traceparent`` names (no span of its own).

    Without a valid ``traceparent``, the block runs outside any trace, so a
    message it sends carries no ``traceparent`` of an unrelated trace.
    """
    ctx = _context_of(traceparent)
    token = otel_context.attach(ctx if ctx is not None else otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)


@contextmanager
def untraced() -> Iterator[None]:
    """Run the block under a parent that is not sampled, so the SDK calls in it record no span.

    For the read that finds a job's trace before the step's span can start: an
    unparented storage span would otherwise be a trace of its own.
    """
    unsampled = SpanContext(
        trace_id=random.getrandbits(128) or 1,
        span_id=random.getrandbits(64) or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.DEFAULT),
    )
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(unsampled)))
    try:
        yield
    finally:
        otel_context.detach(token)
