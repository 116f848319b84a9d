"""The submit step (queue ``jobs-submit``): submit the job, persist the handle, start polling.

Safe to run twice for one job: the adapter binds a repeated submission to the
provider job that exists, the handle is stored by an ETag write that a job
already bound (or ended) refuses, and a job that already has a handle only gets
its poll chain re-armed. One document write per submission: the ``submitting``
event (dated when the submission began) and the handle go together.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.chain import PendingPoll
from hastegeo.pipeline.deadlines import expire
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.profile import job_profile, with_profile
from hastegeo.store.jobs import Versioned
from hastegeo.store.queues import JobMessage
from hastegeo.telemetry import meter, tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.telemetry.meter import ReasonClass
from hastegeo.utils.errors import (
    HasteError,
    InvalidJobError,
    TransientBackendError,
    describe_exception,
)

log = logging.getLogger(__name__)
SOURCE = "submit"


class SubmitStep:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def handle(self, message: JobMessage, *, seated: bool = False) -> None:
        """Raises TransientBackendError (and storage errors) so the host redelivers the message.

        ``seated``: the job was just given its admission seat (:meth:`seated`), so it does not ask again.
        """
        with self._deps.step("submit", message) as version:
            if version is None:
                log.warning(
                    "submit: job %s does not exist; dropping the message",
                    message.job_id,
                    extra=job_fields(job_id=message.job_id),
                )
                return
            self._handle(version, seated)

    def seated(self, job_id: str) -> None:
        """Submit job ``job_id`` now: the write that freed a seat gave it this job (the journal's hand-over)."""
        self.handle(JobMessage(job_id=job_id, kind="submit"), seated=True)

    def _handle(self, version: Versioned, seated: bool) -> None:
        deps = self._deps
        job = version.job
        tracer.annotate(job)
        if job.state.terminal or (job.waiting_for and job.state is JobState.QUEUED):
            return  # ended, or waiting for its upstreams (ADR 0040): their release sends it again
        if job.handle is not None:
            self._arm_poll(job)
            return
        if job.state is JobState.CANCEL_REQUESTED:
            deps.journal.end(
                job.id, JobState.CANCELLED, "cancelled before it was submitted", source=SOURCE, reason="cancelled"
            )
            return
        if expire(deps, job, SOURCE):
            return
        if over_budget(deps, version, seated, SOURCE):  # its project spent its month's budget (ADR 0042)
            return
        if not seated and self._held(version):  # its project is at a limit, or its backend full (ADR 0032)
            return

        # No write before the provider's submit: a crash after it leaves the job queued, the message
        # comes back and the adapter binds the repeat to the provider job that exists (one provider
        # job per job id). The attempt is recorded by the write that follows it: the handle's, or
        # the failure's. See docs/adr/0016-fewer-storage-calls-per-job.md.
        started = deps.clock()
        attempt = job.attempts.submit + 1
        processor = deps.processors[job.workload]
        try:
            profile = job_profile(deps.settings, job)
            spec = with_profile(processor.build_spec(job, deps.spec_inputs, deps.output_location(job.id)), profile)
            handle = deps.service.submit(job.backend, spec)
        except TransientBackendError as exc:
            cause = describe_exception(exc)
            deps.journal.update(job.id, lambda j: self._failed_attempt(j, attempt, cause), known=version)
            raise
        except HasteError as exc:
            cause = describe_exception(exc)
            line = f"could not be submitted to {job.backend}: {cause}"
            kind: ReasonClass = "validation" if isinstance(exc, InvalidJobError) else "provider"
            deps.journal.end(job.id, JobState.FAILED, line, source=SOURCE, reason=cause, reason_class=kind)
            return

        # The chain's first message goes before the handle is stored, so that write can name it and
        # whoever ends the job first can delete it. It waits out the poll delay; one that still
        # arrives before the handle is stored sends itself again (see the poll step).
        pending = self._arm_poll(job)
        settings = deps.settings
        run_s = profile.run_deadline_s(settings.queue_limit_s(job.backend), settings.pipeline.run_deadline_s)
        bound = deps.journal.update(
            job.id, lambda j: self._bind(j, handle, pending, started, attempt, run_s), known=version
        )
        job = bound.job
        if bound.wrote:
            meter.job_started(job)
            tracer.annotate(job)
        elif job.state.terminal and job.handle is None:
            # It ended while being submitted (cancelled while queued, or expired): nobody else knows
            # this provider job, so stop it here.
            deps.cancel_provider(handle, job, "the reconciler's orphan sweep")
        if job.state is JobState.CANCEL_REQUESTED:
            deps.cancel_provider(handle, job, "the poll step")

    def _held(self, version: Versioned) -> bool:
        """Whether the job must wait for a seat; its history then says why, once per reason."""
        deps = self._deps
        if deps.admission is None:
            return False
        job = version.job
        reason = deps.admission.seat(job.id, job.project_id, job.backend)
        if reason is None:
            return False

        def change(job: Job) -> Job | None:
            if job.state is not JobState.QUEUED or job.handle is not None or job.waiting_for_compute == reason:
                return None
            return deps.event(job, f"waiting: {reason}", SOURCE, waiting_for_compute=reason)

        deps.journal.update(job.id, change, known=version)
        return True

    def _failed_attempt(self, job: Job, attempt: int, cause: str) -> Job | None:
        """A transient failure, with the attempt's count (no write before the attempt recorded it)."""
        if job.state.terminal or job.handle is not None:
            return None  # ended, or another delivery bound it meanwhile
        return self._deps.event(
            job,
            message=f"submit attempt {attempt} on {job.backend} failed, will retry: {cause}",
            source=SOURCE,
            last_error=cause,
            attempts=job.attempts.model_copy(update={"submit": max(attempt, job.attempts.submit)}),
        )

    def _bind(
        self, job: Job, handle: ComputeJobHandle, pending: PendingPoll, started: datetime, attempt: int, run_s: int
    ) -> Job | None:
        """Store the handle and move the job to running (to end within ``run_s``: its profile's bound); a queued
        job first gets its ``submitting`` event, dated when the submission began (one write for both)."""
        if job.handle is not None or job.state.terminal:
            return None
        deps = self._deps
        if job.state is JobState.QUEUED:
            attempt = max(attempt, job.attempts.submit + 1)  # a failed attempt recorded meanwhile counts
            job = deps.event(
                job,
                message=f"submitting to {job.backend}" + (f" (attempt {attempt})" if attempt > 1 else ""),
                source=SOURCE,
                state=JobState.SUBMITTING,
                at=started,
                attempts=job.attempts.model_copy(update={"submit": attempt}),
            )
        now = deps.clock()
        ids = ", ".join(f"{key}={value}" for key, value in sorted(handle.provider_ids.items()) if key != "notes")
        # What the operator should know about the submission (an environment
        # created, local code uploaded); handles stored before it had a field
        # of its own carry it in the "notes" id.
        notes = handle.notes or handle.provider_ids.get("notes")
        target = JobState.RUNNING if job.state is JobState.SUBMITTING else None
        return deps.event(
            job,
            message=f"submitted to {handle.backend} ({ids})" + (f"; {notes}" if notes else ""),
            source=SOURCE,
            state=target,
            handle=handle,
            last_error=None,  # submitted: an earlier attempt's error is past
            **pending.fields(),
            started_at=now,
            deadline_at=now + timedelta(seconds=run_s),
        )

    def _arm_poll(self, job: Job) -> PendingPoll:
        return self._deps.chain.send(job.id, job.poll_seq, self._deps.chain.delay(0))


def over_budget(deps: PipelineDeps, version: Versioned, seated: bool, source: str) -> bool:
    """Whether a queued job may not start because its project spent its budget: then it is held (its
    history says why, once) or refused (it fails with the reason), and gives back a seat it was handed."""
    budgets, totals, job = deps.budgets, deps.journal.totals, version.job
    if budgets is None or totals is None or not budgets.active:
        return False
    reason = budgets.reason(job.project_id, totals)
    if reason is None:
        return False
    if seated and deps.admission is not None:
        deps.admission.free([job.id])  # the next in line gets it (and asks the same question)
    if budgets.refuses:
        deps.journal.end(job.id, JobState.FAILED, f"refused: {reason}", source=source, reason=reason)
        return True

    def change(current: Job) -> Job | None:
        if current.state is not JobState.QUEUED or current.handle is not None or current.waiting_for_compute == reason:
            return None
        if (current.waiting_for_compute or "").startswith(f"project {job.project_id} has spent "):
            return current.model_copy(update={"waiting_for_compute": reason})  # held already: said once
        return deps.event(current, f"waiting: {reason}", source, waiting_for_compute=reason)

    deps.journal.update(job.id, change, known=version)
    return True
