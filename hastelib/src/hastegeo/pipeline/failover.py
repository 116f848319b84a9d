"""Moving an ``auto`` job to its next backend when its compute does not come.

The poll step decides a queued provider job has waited enough
(:func:`hastegeo.compute.capacity.verdict`); for a job that asked for ``auto``
this module moves it on instead of failing it, in two ETag-checked writes so
there is never more than one provider job per job:

1. :meth:`Failover.begin` records why the job is leaving (``moving``), with
   its history line, and the provider job is cancelled.
2. :meth:`Failover.finish`, once the provider reports that job ended
   (cancelled or failed: "confirmed gone"), moves the job back to ``queued``
   on the next backend of its rendezvous ranking that can run its workload,
   and sends its submit message.

A crash between the steps leaves ``moving`` set: the next poll cancels again
and finishes. A redelivered poll after the move carries an old chain number
and is dropped; a lost submit message is re-sent by the reconciler, which
re-submits quiet queued jobs. Each backend is left at most once and a job
moves at most :data:`MAX_MOVES` times.
"""

from __future__ import annotations

from datetime import timedelta

from hastegeo.compute.contract import ComputeStatus
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.usage import told
from hastegeo.store.jobs import Versioned
from hastegeo.store.queues import SUBMIT_QUEUE, JobMessage
from hastegeo.telemetry import tracer

MAX_MOVES = 2
SOURCE = "failover"


class Failover:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def next_backend(self, job: Job) -> str | None:
        """Where ``job`` goes when its backend's compute does not come; None: it stays and fails."""
        if job.requested_backend != "auto" or len(job.backends_left) >= MAX_MOVES:
            return None
        left = {*job.backends_left, job.backend}
        ranking = self._deps.router.ranking(job.workload, job.id, job.profile)  # only backends that offer its profile
        return next((name for name in ranking if name not in left), None)

    def begin(self, version: Versioned, line: str) -> bool:
        """Record that the job is leaving its backend (``line`` says why). False: it has nowhere to go."""
        job = version.job
        target = self.next_backend(job)
        if target is None:
            return False
        handle = job.handle

        def change(current: Job) -> Job | None:
            if current.state is not JobState.RUNNING or current.handle != handle or current.moving is not None:
                return None
            return self._deps.event(current, f"{line}; moving to {target}", SOURCE, moving=line)

        self._deps.journal.update(job.id, change, known=version)
        return True

    def finish(self, job: Job, status: ComputeStatus | None = None) -> bool:
        """Move ``job`` (its provider job confirmed gone: ``status``) to its next backend; True when this call
        moved it. The runs it had there stay on the job, to be priced with the others when it ends."""
        deps = self._deps
        handle = job.handle
        target = self.next_backend(job)
        if target is None:  # the settings changed since it began: nowhere to go now
            reason = job.moving or "its compute did not come"
            return deps.journal.end(
                job.id,
                JobState.FAILED,
                f"failed: {reason}",
                source=SOURCE,
                reason=reason,
                reason_class="provider",
                before=lambda current: told(current, status) if status else current,
            )

        def change(current: Job) -> Job | None:
            if current.state is not JobState.RUNNING or current.handle != handle or current.moving is None:
                return None
            now = deps.clock()
            return deps.event(
                told(current, status) if status else current,
                f"moved from {current.backend} to {target}: its provider job is gone",
                SOURCE,
                JobState.QUEUED,
                backend=target,
                handle=None,
                moving=None,
                backends_left=[*current.backends_left, current.backend],
                poll_seq=current.poll_seq + 1,  # the old chain's messages are dropped when they arrive
                poll_message=None,
                poll_due_at=None,
                started_at=None,
                detail=None,
                waiting_for_compute=None,
                progress=None,
                progress_offset=0,
                deadline_at=now + timedelta(seconds=deps.settings.pipeline.queued_deadline_s),
            )

        update = deps.journal.update(job.id, change)
        if update.wrote and update.job.state is JobState.QUEUED:
            with tracer.within(update.job.trace_parent):
                deps.queues.send(SUBMIT_QUEUE, JobMessage(job_id=job.id, kind="submit"))
        return update.wrote
