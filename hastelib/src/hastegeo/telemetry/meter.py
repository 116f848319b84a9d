"""The pipeline's metrics: what a job did, counted once, by backend, workload and reason class.

Instruments come from the OpenTelemetry API meter, which forwards to the SDK
once :func:`hastegeo.telemetry.configure.configure_telemetry` installs one
and costs a no-op call until then. Names are the ones the workbook, the alert
rules (``infra/modules/observability.bicep``) and ``docs/operations.md`` query.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from opentelemetry import metrics

from hastegeo.models.states import JobState

if TYPE_CHECKING:
    from hastegeo.models.job import Job

ReasonClass = Literal["validation", "provider", "workload", "deadline", "poison"]
REASON_CLASSES: tuple[ReasonClass, ...] = ("validation", "provider", "workload", "deadline", "poison")

_METER = metrics.get_meter("hastegeo")
METRIC_NAMES: set[str] = set()  # every instrument's name, for the checks of the alert queries


def _counter(name: str, unit: str, description: str) -> metrics.Counter:
    METRIC_NAMES.add(name)
    return _METER.create_counter(name, unit=unit, description=description)


def _histogram(name: str, unit: str, description: str) -> metrics.Histogram:
    METRIC_NAMES.add(name)
    return _METER.create_histogram(name, unit=unit, description=description)


ACCEPTED = _counter("haste.jobs.accepted", unit="{job}", description="Jobs stored and enqueued.")
STARTED = _counter("haste.jobs.started", unit="{job}", description="Jobs a provider accepted.")
SUCCEEDED = _counter("haste.jobs.succeeded", unit="{job}", description="Jobs that succeeded.")
FAILED = _counter(
    "haste.jobs.failed", unit="{job}", description="Jobs that failed, by reason_class (validation, provider, ...)."
)
CANCELLED = _counter("haste.jobs.cancelled", unit="{job}", description="Jobs cancelled.")
QUEUE_WAIT = _histogram("haste.job.queue_wait", unit="s", description="From accepted to submitted to the provider.")
PROVIDER_WAIT = _histogram(
    "haste.job.provider_wait", unit="s", description="From submitted to first seen running by a poll."
)
RUN_TIME = _histogram("haste.job.run_time", unit="s", description="From submitted to the workload's end.")
POSTPROCESS_TIME = _histogram(
    "haste.job.postprocess_time", unit="s", description="Reading, checking and recording a finished job's outputs."
)
POLLS = _histogram("haste.job.polls", unit="{call}", description="Provider status calls per ended job.")
BLOB_FALLBACK = _counter(
    "haste.outputs.blob_fallback", unit="{read}", description="Output reads served by the blob copy, not the provider."
)
RECONCILE_FINDINGS = _counter(
    "haste.reconcile.findings", unit="{job}", description="What the reconciler acted on, by finding."
)
RECONCILE_ERRORS = _counter(
    "haste.reconcile.errors", unit="{run}", description="Reconciler runs that could not reach a source, by source."
)


def _labels(job: Job) -> dict[str, str]:
    return {"backend": job.backend, "workload": job.workload}


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return max(0.0, (end - start).total_seconds())


def job_accepted(job: Job) -> None:
    ACCEPTED.add(1, _labels(job))


def job_started(job: Job) -> None:
    """Counted when the provider handle is bound; the queue wait ends here."""
    STARTED.add(1, _labels(job))
    waited = _seconds(job.created_at, job.started_at)
    if waited is not None:
        QUEUE_WAIT.record(waited, _labels(job))


def provider_started(job: Job, now: datetime) -> None:
    """The first poll that sees the provider run the job."""
    waited = _seconds(job.started_at, now)
    if waited is not None:
        PROVIDER_WAIT.record(waited, _labels(job))


def workload_ended(job: Job, now: datetime) -> None:
    ran = _seconds(job.started_at, now)
    if ran is not None:
        RUN_TIME.record(ran, _labels(job))


def postprocessed(job: Job, seconds: float) -> None:
    POSTPROCESS_TIME.record(seconds, _labels(job))


def job_ended(job: Job, reason_class: ReasonClass | None = None) -> None:
    """``job`` has just reached its terminal state (count each job once: call only from the write that ended it)."""
    labels = _labels(job)
    if job.state is JobState.SUCCEEDED:
        SUCCEEDED.add(1, labels)
    elif job.state is JobState.CANCELLED:
        CANCELLED.add(1, labels)
    else:
        FAILED.add(1, {**labels, "reason_class": reason_class or "workload"})
    POLLS.record(job.attempts.poll, labels)


def blob_fallback(backend: str) -> None:
    """An output the provider could not serve was read from its blob copy."""
    BLOB_FALLBACK.add(1, {"backend": backend})


def reconcile_finding(finding: str, count: int) -> None:
    if count:
        RECONCILE_FINDINGS.add(count, {"finding": finding})


def reconcile_error(source: str) -> None:
    RECONCILE_ERRORS.add(1, {"source": source})
