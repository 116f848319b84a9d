"""The capacity board: each backend's queue (jobs waiting for compute, the oldest wait, the last reason).

The reconciler reads every unfinished job each pass anyway; from those
documents :func:`summarize` counts, per backend, the jobs still waiting (not
submitted yet, or submitted and not started by the provider) and keeps the
newest capacity reason a job recorded (``Job.waiting_for_compute``). The
result (pure: :func:`summarize`) is one small document in the jobs container
(:class:`CapacityBoard`) that ``GET /api/backends`` reads in one call, whatever the number of jobs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from datetime import datetime

from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.storage.blob import ContainerClient
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from hastegeo.models.job import Job
from hastegeo.models.states import JobState

log = logging.getLogger(__name__)
NOT_STARTED = frozenset({JobState.QUEUED, JobState.SUBMITTING})
BOARD_BLOB = "capacity/board.json"


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


_BOARD = TypeAdapter(dict[str, BackendQueue])


class CapacityBoard:
    def __init__(self, container: ContainerClient) -> None:
        self._container = container

    def read(self) -> dict[str, BackendQueue]:
        """The board as last written; empty when there is none yet or it cannot be read (it is a view only)."""
        try:
            data = self._container.download_blob(BOARD_BLOB).readall()
            return _BOARD.validate_json(data)
        except ResourceNotFoundError:
            return {}
        except (AzureError, ValidationError) as exc:
            log.warning("capacity board not readable: %s", type(exc).__name__)
            return {}

    def write(self, board: dict[str, BackendQueue]) -> None:
        """Replace the board (last writer wins: every reconciler pass computes it whole)."""
        body = {name: queue.model_dump(mode="json", by_alias=True) for name, queue in board.items()}
        self._container.upload_blob(BOARD_BLOB, json.dumps(body, sort_keys=True).encode(), overwrite=True)
