"""Deadlines: the one place that decides a job has run out of time, says why, and ends it.

The submit step, the poll step and the reconciler all call :func:`expire`,
so a job that times out reads the same whichever of them noticed first.
"""

from __future__ import annotations

import logging

from hastegeo.models.history import clean_message
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deps import PipelineDeps

log = logging.getLogger(__name__)

EXPIRY_REASONS = {
    JobState.QUEUED: "was not submitted before its deadline",
    JobState.SUBMITTING: "was not submitted before its deadline",
    JobState.RUNNING: "did not finish before its deadline",
    JobState.CANCEL_REQUESTED: "did not stop before its deadline",
    JobState.POSTPROCESSING: "post-processing did not finish before its deadline",
}


def expiry_reason(job: Job) -> str:
    """``<what did not happen> before its deadline (<limit>s)``, the limit counted from when it applied.

    When the job was stuck on a retried error (``last_error``: the steps clear it once they get
    past it), the reason says so: "did not finish" alone would hide that the workload ended long
    ago and its outputs never reached storage, or that the provider stopped answering.
    """
    limit = int((job.deadline_at - (job.started_at or job.created_at)).total_seconds())
    reason = f"{EXPIRY_REASONS[job.state]} ({limit}s)"
    return f"{reason}; the last attempt failed: {clean_message(job.last_error)}" if job.last_error else reason


def expire(deps: PipelineDeps, job: Job, source: str) -> bool:
    """Fail ``job`` if it is past its deadline, and cancel its provider job.

    Returns True when this call ended it; False when it is within its
    deadline or had already ended.
    """
    if deps.clock() <= job.deadline_at:
        return False

    def change(current: Job) -> Job | None:
        if current.state.terminal or deps.clock() <= current.deadline_at:
            return None
        reason = expiry_reason(current)
        return deps.event(current, f"failed: {reason}", source, JobState.FAILED, reason=reason)

    update = deps.journal.update(job.id, change, reason_class="deadline")
    if update.wrote and update.job.handle is not None:
        deps.cancel_provider(update.job.handle, update.job, "the reconciler's orphan sweep")
    return update.wrote
