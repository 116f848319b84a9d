"""Which spans are recorded: traces start at steps, ``OTEL_TRACES_SAMPLER`` decides which, storage HTTP is folded.

- :class:`StepRoots` starts traces only at steps and requests, as ``root`` (the
  ``OTEL_TRACES_SAMPLER`` choice) says; inside a trace the parent decides.
- :class:`QuietStorageHttp` drops the per-request HTTP span under a storage SDK
  call (``BlobClient.upload_blob`` → ``PUT``). The pipeline's own bookkeeping
  (job documents, queue messages, outputs) makes ~19 such calls a job; the SDK
  method span already names the call, its duration and its error, so the HTTP
  child doubled the spans a job costs for little. Provider calls (Batch, Azure
  ML) keep their HTTP spans: their retries and status codes are what an
  operator looks for.
- :data:`hastegeo.telemetry.tracer.STORAGE_CLIENT_OPTIONS` spares the pipeline's
  own storage clients even the dropped span: azure-core skips its HTTP tracing
  for their requests.
- :func:`pipeline_sampler` puts them together from ``OTEL_TRACES_SAMPLER`` and
  ``OTEL_TRACES_SAMPLER_ARG`` (docs/adr/0012, docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import Link, SpanKind
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

from hastegeo.utils.errors import ConfigurationError

SAMPLER_VARIABLE = "OTEL_TRACES_SAMPLER"
SAMPLER_ARG_VARIABLE = "OTEL_TRACES_SAMPLER_ARG"
DEFAULT_SAMPLER = "parentbased_always_on"
# The standard OpenTelemetry sampler names the file and console modes accept (the Azure Monitor
# distro reads the same variables itself and adds microsoft.rate_limited / microsoft.fixed_percentage).
SAMPLER_NAMES = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
# The storage SDK clients whose method spans make the HTTP child redundant.
STORAGE_CLIENTS = ("BlobClient.", "ContainerClient.", "BlobServiceClient.", "QueueClient.", "QueueServiceClient.")


class _Choosing(Sampler):
    """Hands each decision to the sampler :meth:`choose` picks for the span about to start."""

    def choose(self, parent_context: Context | None, name: str, kind: SpanKind | None) -> Sampler:
        raise NotImplementedError

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        chosen = self.choose(parent_context, name, kind)
        return chosen.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)


class StepRoots(_Choosing):
    """Start traces only at steps and requests, as ``root`` decides (use as ``ParentBased(root=StepRoots())``).

    A storage call outside any step (the development host polling its queues
    every second) would otherwise be a trace of its own, many a minute. Steps
    and requests are server and consumer spans; the reconciler's run is the
    one internal root. Inside a trace, the parent decides.
    """

    def __init__(self, root: Sampler = ALWAYS_ON) -> None:
        self._root = root

    def choose(self, parent_context: Context | None, name: str, kind: SpanKind | None) -> Sampler:
        step = kind in (SpanKind.SERVER, SpanKind.CONSUMER) or name == "reconcile"
        return self._root if step else ALWAYS_OFF

    def get_description(self) -> str:
        return f"StepRoots{{{self._root.get_description()}}}"


def is_storage_http(parent_context: Context | None, kind: SpanKind | None) -> bool:
    """Whether a span about to start is the HTTP request of a storage SDK call (pure: reads the context only)."""
    if kind is not SpanKind.CLIENT:
        return False
    parent_name = getattr(trace.get_current_span(parent_context), "name", None)
    return isinstance(parent_name, str) and parent_name.startswith(STORAGE_CLIENTS)


class QuietStorageHttp(_Choosing):
    """``delegate``'s decision, except that a storage SDK call's HTTP span is dropped (its parent stays;
    ``ALWAYS_OFF`` keeps the parent's trace state)."""

    def __init__(self, delegate: Sampler) -> None:
        self._delegate = delegate

    def choose(self, parent_context: Context | None, name: str, kind: SpanKind | None) -> Sampler:
        return ALWAYS_OFF if is_storage_http(parent_context, kind) else self._delegate

    def get_description(self) -> str:
        return f"QuietStorageHttp{{{self._delegate.get_description()}}}"


def _ratio(environ: Mapping[str, str]) -> float:
    raw = environ.get(SAMPLER_ARG_VARIABLE, "").strip()
    if not raw:
        return 1.0
    try:
        ratio = float(raw)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise ConfigurationError(f"{SAMPLER_ARG_VARIABLE}={raw!r}: a ratio from 0 to 1 (the share of jobs traced)")
    return ratio


def pipeline_sampler(environ: Mapping[str, str]) -> Sampler:
    """The sampler of the file and console modes, from ``OTEL_TRACES_SAMPLER`` (default: every step's trace).

    The named sampler makes the root decision at steps (:class:`StepRoots`); the
    ``parentbased_*`` ones (the default among them) keep a job's trace whole,
    since every later step is the child of the message's sampled or unsampled
    ``traceparent``. The plain ones decide afresh under a remote parent (the
    caller's or the message's ``traceparent``); ``traceidratio`` still keeps
    a job whole, as it decides from the trace id. A span inside a step follows
    its step. Storage HTTP spans are dropped whatever the choice.

    Raises:
        ConfigurationError: an unknown sampler name, or a ratio outside 0..1.
    """
    name = environ.get(SAMPLER_VARIABLE, "").strip().lower() or DEFAULT_SAMPLER
    if name not in SAMPLER_NAMES:
        raise ConfigurationError(f"{SAMPLER_VARIABLE}={name!r}: choose one of {', '.join(SAMPLER_NAMES)}")
    base = name.removeprefix("parentbased_")
    root: Sampler = {"always_on": ALWAYS_ON, "always_off": ALWAYS_OFF}.get(base) or TraceIdRatioBased(_ratio(environ))
    if name.startswith("parentbased_"):
        return QuietStorageHttp(ParentBased(root=StepRoots(root)))
    return QuietStorageHttp(
        ParentBased(root=StepRoots(root), remote_parent_sampled=root, remote_parent_not_sampled=root)
    )
