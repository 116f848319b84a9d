"""One job state change as a CloudEvents 1.0 JSON event (pure; the contract is docs/events.md).

The event's ``id`` is the job id and the change's per-job sequence number, so every
delivery of one change (a redelivery, the reconciler's catch-up) carries the same id;
``type`` names the state the job entered. ``data`` is a small summary of the job: no
history, no outputs list, no URLs, and every free text through the redaction module, so an
event never carries a secret and always fits a queue message.
"""

from __future__ import annotations

from typing import Any

from hastegeo.models.changes import StateChange
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.utils.redaction import redact

SPEC_VERSION = "1.0"
TYPE_PREFIX = "com.haste.job."
SOURCE_PREFIX = "/haste-compute/projects/"
DATA_CONTENT_TYPE = "application/json"
# The version of ``data``'s shape; a change that removes or renames a member raises it.
DATA_VERSION = 1


def event_type(state: JobState) -> str:
    """``com.haste.job.<state>``, e.g. ``com.haste.job.succeeded``."""
    return TYPE_PREFIX + state.value


def event_id(job_id: str, seq: int) -> str:
    """Unique per change and the same on every delivery of it."""
    return f"{job_id}.{seq}"


def build(job: Job, change: StateChange) -> dict[str, Any]:
    """The CloudEvent (structured JSON mode) for ``change`` of ``job``.

    ``data.state`` and ``data.sequence`` are the change's; the other members describe the
    job as stored when the event was published (the same write, unless the reconciler
    publishes a change late).
    """
    event: dict[str, Any] = {
        "specversion": SPEC_VERSION,
        "id": event_id(job.id, change.seq),
        "source": SOURCE_PREFIX + job.project_id,
        "type": event_type(change.state),
        "subject": job.id,
        "time": change.at.isoformat(),
        "datacontenttype": DATA_CONTENT_TYPE,
        "data": _data(job, change),
    }
    if job.trace_parent:  # the CloudEvents distributed-tracing extension: the job's own trace
        event["traceparent"] = job.trace_parent
    return event


def _data(job: Job, change: StateChange) -> dict[str, Any]:
    submitter = job.submitted_by
    return {
        "version": DATA_VERSION,
        "jobId": job.id,
        "sequence": change.seq,
        "state": change.state.value,
        "changedAt": change.at.isoformat(),
        "projectId": job.project_id,
        "workload": job.workload,
        "backend": job.backend,
        "requestedBackend": job.requested_backend,
        "submittedBy": None if submitter is None else submitter.model_dump(mode="json", by_alias=True),
        "idempotencyKey": _clean(job.request_key),
        "correlationId": job.correlation_id,
        "parentJobId": job.parent_job_id,
        "retryOf": job.retry_of,
        "reason": _clean(job.reason) if change.state.terminal else None,
        "createdAt": job.created_at.isoformat(),
        "finishedAt": job.finished_at.isoformat() if change.state.terminal and job.finished_at else None,
        "outputCount": len(job.outputs) if change.state is JobState.SUCCEEDED else None,
        "cost": _cost(job) if change.state.terminal else None,
        "links": {"job": f"/api/jobs/{job.id}"},
    }


def _cost(job: Job) -> dict[str, Any] | None:
    """What the job's compute cost (docs/adr/0038), without its attempts (those are on the job)."""
    if job.cost is None:
        return None
    return job.cost.model_dump(mode="json", by_alias=True, include={"amount", "currency", "reason", "attributed"})


def _clean(text: str | None) -> str | None:
    return None if text is None else redact(text)
