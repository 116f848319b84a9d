"""A job document as the store holds it, for the pure tests of what reads one."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hastegeo.models.history import make_event
from hastegeo.models.job import Job
from hastegeo.models.states import JobState


def job_document(created: datetime, state: JobState = JobState.QUEUED, **fields: Any) -> Job:
    """Job ``j-1`` of project ``p1``, created at ``created`` with its "accepted" event, due an hour later;
    ``fields`` (the model's names) replace any of that."""
    values: dict[str, Any] = {
        "id": "j-1",
        "project_id": "p1",
        "workload": "artifacts",
        "state": state,
        "requested_backend": "auto",
        "backend": "local",
        "created_at": created,
        "updated_at": created,
        "deadline_at": created + timedelta(hours=1),
        "history": [make_event(created, JobState.QUEUED, "accepted", "test")],
    }
    return Job(**{**values, **fields})
