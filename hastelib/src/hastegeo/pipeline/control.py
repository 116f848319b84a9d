"""Steps that end jobs from outside the normal flow: cancellation and poison messages."""

from __future__ import annotations

import logging

from hastegeo.models.job import Job
from hastegeo.models.states import CANCELLABLE, JobState
from hastegeo.pipeline.deps import PipelineDeps, ended_job
from hastegeo.store.jobs import Versioned
from hastegeo.store.queues import POLL_QUEUE, JobMessage
from hastegeo.telemetry import tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.utils.errors import ConflictError, HasteError, describe_exception

log = logging.getLogger(__name__)


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

        update = deps.store.update(job_id, change)
        job = update.job
        tracer.annotate(job)
        if update.wrote and job.state.terminal:  # a queued job: this call ended it
            ended_job(job)
        if job.state is JobState.CANCEL_REQUESTED and job.handle is not None:
            deps.cancel_provider(job.handle, job, "the poll step")
            with tracer.within(job.trace_parent):  # the poll that sees it stop belongs to the job's trace
                deps.queues.send(POLL_QUEUE, JobMessage(job_id=job.id, kind="nudge"))
        return job


class PoisonStep:
    """A message the host gave up on: fail its job with a readable cause. Nothing is dropped silently."""

    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def handle(self, text: str, queue: str) -> None:
        try:
            message = JobMessage.model_validate_json(text)
        except ValueError:
            log.error("poison message on %s is not a job pointer; recorded in the log only: %.200s", queue, text)
            return
        with self._deps.step("poison", message) as version:
            self._fail(message, queue, version)

    def _fail(self, message: JobMessage, queue: str, version: Versioned | None) -> None:
        deps = self._deps
        step = "submit" if message.kind == "submit" else "poll"

        def change(job: Job) -> Job | None:
            if job.state.terminal:
                return None
            cause = job.last_error or "no error was recorded"
            reason = f"gave up after repeated failures of the {step} step; last error: {cause}"
            return deps.event(
                job,
                message=f"failed: {reason}",
                source="poison",
                state=JobState.FAILED,
                reason=reason,
            )

        try:
            update = deps.store.update(message.job_id, change, known=version)
        except HasteError as exc:
            log.error(
                "poison message for job %s could not be applied: %s",
                message.job_id,
                describe_exception(exc),
                extra=job_fields(job_id=message.job_id),
            )
            return
        job = update.job
        tracer.annotate(job)
        if update.wrote:
            ended_job(job, "poison")
        if job.state is JobState.FAILED and job.handle is not None:
            deps.cancel_provider(job.handle, job, "the reconciler's orphan sweep")
