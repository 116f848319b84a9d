"""A job moved to a state, with the history event that says so: the value every state change writes. Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hastegeo.models.history import append_event, make_event
from hastegeo.models.job import Job
from hastegeo.models.states import JobState, transition


def record(
    job: Job,
    *,
    now: datetime,
    limit: int,
    message: str,
    source: str,
    state: JobState | None = None,
    **fields: Any,
) -> Job:
    """``job`` moved to ``state`` (checked by the state machine) with one history event appended.

    The history keeps at most ``limit`` events (older ones folded); ``fields`` are set in the same copy.
    Raises InvalidTransitionError for a move the state machine does not allow.
    """
    new_state = job.state if state is None or state == job.state else transition(job.state, state)
    history, folded = append_event(job.history, job.history_folded, make_event(now, new_state, message, source), limit)
    update: dict[str, Any] = {
        "state": new_state,
        "history": history,
        "history_folded": folded,
        "updated_at": now,
        **fields,
    }
    if new_state.terminal and job.finished_at is None:
        update.setdefault("finished_at", now)
    return job.model_copy(update=update)
