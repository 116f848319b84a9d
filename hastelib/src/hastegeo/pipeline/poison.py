"""The poison step (``*-poison`` queues): a message the host gave up on fails its job with a readable cause."""

from __future__ import annotations

import logging

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.store.jobs import Versioned
from hastegeo.store.queues import JobMessage
from hastegeo.telemetry import tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.utils.errors import HasteError, describe_exception

log = logging.getLogger(__name__)


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
            update = deps.journal.update(message.job_id, change, known=version, reason_class="poison")
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
        if job.state is JobState.FAILED and job.handle is not None:
            deps.cancel_provider(job.handle, job, "the reconciler's orphan sweep")
