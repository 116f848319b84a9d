"""Job states and the one pure function that decides which moves are legal.

    queued ──► submitting ──► running ──► postprocessing ──► succeeded
       │            │            │               │
       │            └──────┬─────┘               └────────► failed
       │                   ▼
       │            cancel_requested ──► cancelled | failed | postprocessing
       └──► cancelled | failed

    running ──► queued: an ``auto`` job whose compute did not come moves to its next backend.

A job that a worker crashed in the middle of a step stays in that step's
state; the redelivered message resumes it, so self-moves are not needed.
"""

from __future__ import annotations

import enum

from hastegeo.utils.errors import IllegalTransitionError


class JobState(enum.StrEnum):
    QUEUED = "queued"
    SUBMITTING = "submitting"
    RUNNING = "running"
    POSTPROCESSING = "postprocessing"
    CANCEL_REQUESTED = "cancel_requested"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})

ALLOWED: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.SUBMITTING, JobState.CANCELLED, JobState.FAILED}),
    JobState.SUBMITTING: frozenset({JobState.RUNNING, JobState.CANCEL_REQUESTED, JobState.FAILED}),
    # Back to queued: an ``auto`` job whose compute did not come moves to its next backend
    # (pipeline/failover.py), once its provider job is confirmed gone.
    JobState.RUNNING: frozenset(
        {JobState.POSTPROCESSING, JobState.CANCEL_REQUESTED, JobState.FAILED, JobState.CANCELLED, JobState.QUEUED}
    ),
    # The provider may finish the work before the cancellation lands; the
    # outputs are then real and the history says so.
    JobState.CANCEL_REQUESTED: frozenset({JobState.CANCELLED, JobState.FAILED, JobState.POSTPROCESSING}),
    JobState.POSTPROCESSING: frozenset({JobState.SUCCEEDED, JobState.FAILED}),
    JobState.SUCCEEDED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}

CANCELLABLE = frozenset({JobState.QUEUED, JobState.SUBMITTING, JobState.RUNNING})


def transition(current: JobState, target: JobState) -> JobState:
    """Return ``target`` if a job in ``current`` may move there.

    Raises:
        IllegalTransitionError: the move is not in :data:`ALLOWED`.
    """
    if target not in ALLOWED[current]:
        raise IllegalTransitionError(current.value, target.value)
    return target
