"""The cancel step (``POST /api/jobs/{id}/cancel``): a queued job ends at once, a running one when it stops."""

from __future__ import annotations

from hastegeo.models.job import Job
from hastegeo.models.states import CANCELLABLE, JobState
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.store.queues import POLL_QUEUE, JobMessage
from hastegeo.telemetry import tracer
from hastegeo.utils.errors import ConflictError


class CancelStep:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def cancel(self, job_id: str) -> Job:
        """Request cancellation. A queued job ends at once; a running one when its provider stops.

        Cancelling a job already being cancelled changes nothing (a repeated request is harmless).

        Raises:
            JobNotFoundError
            ConflictError: the job already ended, or is post-processing (its work is done).
        """
        deps = self._deps

        def change(job: Job) -> Job | None:
            if job.state is JobState.CANCEL_REQUESTED:
                return None
            if job.state.terminal:
                raise ConflictError(f"Job {job.id} already ended ({job.state.value}); there is nothing to cancel")
            if job.state not in CANCELLABLE:
                raise ConflictError(f"Job {job.id} is {job.state.value} and can no longer be cancelled")
            if job.state is JobState.QUEUED:
                return deps.event(
                    job,
                    message="cancelled before it was submitted",
                    source="api",
                    state=JobState.CANCELLED,
                    reason="cancelled by request",
                )
            return deps.event(
                job,
                message="cancellation requested",
                source="api",
                state=JobState.CANCEL_REQUESTED,
            )

        job = deps.journal.update(job_id, change).job
        tracer.annotate(job)
        if job.state is JobState.CANCEL_REQUESTED and job.handle is not None:
            deps.cancel_provider(job.handle, job, "the poll step")
            with tracer.within(job.trace_parent):  # the poll that sees it stop belongs to the job's trace
                deps.queues.send(POLL_QUEUE, JobMessage(job_id=job.id, kind="nudge"))
        return job
