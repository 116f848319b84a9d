"""What each backend's queue looks like: jobs waiting for compute, the oldest wait, the last reason. Pure.

The reconciler reads every unfinished job each pass anyway; from those
documents :func:`summarize` counts, per backend, the jobs still waiting (not
submitted yet, or submitted and not started by the provider) and keeps the
newest capacity reason a job recorded (``Job.waiting_for_compute``). The
result is one small document (:class:`hastegeo.store.board.CapacityBoard`)
that ``GET /api/backends`` reads in one call, whatever the number of jobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from hastegeo.models.job import Job
from hastegeo.models.states import JobState

NOT_STARTED = frozenset({JobState.QUEUED, JobState.SUBMITTING})


class BackendQueue(BaseModel):
    """One backend's queue at ``at``; the reason outlives the wait that gave it (``last_reason_at``)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel)

    waiting: int = 0
    oldest_wait_s: float | None = None
    last_reason: str | None = None
    last_reason_at: datetime | None = None


def waiting_since(job: Job) -> datetime | None:
    """When ``job`` began waiting for compute, or None when it is not waiting."""
    if job.state in NOT_STARTED:
        return job.created_at
    if job.state is JobState.RUNNING and job.waiting_for_compute is not None:
        return job.started_at or job.created_at
    return None


def summarize(jobs: Iterable[Job], now: datetime, previous: Mapping[str, BackendQueue]) -> dict[str, BackendQueue]:
    """Each backend's queue from the unfinished ``jobs``; a backend keeps its ``previous`` last reason
    until a newer one is seen."""
    counts: dict[str, int] = {}
    oldest: dict[str, datetime] = {}
    reasons: dict[str, tuple[datetime, str]] = {
        name: (queue.last_reason_at, queue.last_reason)
        for name, queue in previous.items()
        if queue.last_reason is not None and queue.last_reason_at is not None
    }
    for job in jobs:
        since = waiting_since(job)
        if since is None:
            continue
        counts[job.backend] = counts.get(job.backend, 0) + 1
        oldest[job.backend] = min(since, oldest.get(job.backend, since))
        if job.waiting_for_compute and job.updated_at >= reasons.get(job.backend, (job.updated_at, ""))[0]:
            reasons[job.backend] = (job.updated_at, job.waiting_for_compute)
    return {
        name: BackendQueue(
            waiting=counts.get(name, 0),
            oldest_wait_s=round((now - oldest[name]).total_seconds(), 1) if name in oldest else None,
            last_reason=reasons[name][1] if name in reasons else None,
            last_reason_at=reasons[name][0] if name in reasons else None,
        )
        for name in sorted({*counts, *reasons})
    }
