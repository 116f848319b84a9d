"""The poll step (queue ``jobs-poll``): follow the provider's job until it ends, then hand it to finishing.

One poll chain per job: each ``poll`` message carries the chain's sequence
number, and a message whose number is not the job's current one is a
duplicate and is dropped. The next message is sent before the sequence
advances, so a crash in between yields a duplicate (dropped later), never a
broken chain. ``nudge`` messages look once and never extend the chain.

A provider that is unreachable does not burn the message's delivery count:
the chain keeps polling with backoff, and only the job's deadline fails it.
Once the provider reports the job ended, :mod:`hastegeo.pipeline.finish` takes
it to its end and this module is not entered again for it.
"""

from __future__ import annotations

import logging
from typing import Any

from hastegeo.compute import capacity
from hastegeo.compute.contract import ComputeState, ComputeStatus
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.chain import PendingPoll
from hastegeo.pipeline.deadlines import expire
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.failover import Failover
from hastegeo.pipeline.finish import FinishStep
from hastegeo.pipeline.progress import progress_lines, with_workload_lines
from hastegeo.pipeline.usage import news, told
from hastegeo.store.jobs import Versioned
from hastegeo.store.queues import POLL_QUEUE, JobMessage
from hastegeo.telemetry import meter, tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.telemetry.meter import ReasonClass
from hastegeo.utils.errors import HasteError, TerminalBackendError, describe_exception

log = logging.getLogger(__name__)
SOURCE = "poll"


class PollStep:
    def __init__(self, deps: PipelineDeps, finish: FinishStep) -> None:
        self._deps = deps
        self._failover = Failover(deps)
        self._finish = finish

    def handle(self, message: JobMessage) -> None:
        with self._deps.step(message.kind, message, {tracer.POLL_SEQ: message.poll_seq}) as version:
            if version is not None:
                self._handle(message, version)

    def _handle(self, message: JobMessage, version: Versioned) -> None:
        deps = self._deps
        job = version.job
        tracer.annotate(job)
        chain = message.kind == "poll"
        if job.state.terminal or (chain and message.poll_seq != job.poll_seq):
            return  # ended, or a duplicate or superseded chain message
        if job.handle is None:
            if chain and job.state in (JobState.QUEUED, JobState.SUBMITTING, JobState.CANCEL_REQUESTED):
                # The submit step sends the chain's first message just before it stores the handle (a
                # queued job stays queued until that write); the write is late (or its step is being
                # retried). The chain waits for it.
                deps.queues.send(POLL_QUEUE, message, deps.chain.delay(0))
            return
        if job.state is JobState.POSTPROCESSING:
            self._finish.resume(version, message)  # an earlier post-processing attempt did not complete
            return
        if deps.clock() > job.deadline_at:
            expire(deps, job, SOURCE)
            return
        try:
            status = deps.service.status(job.handle)
        except TerminalBackendError as exc:
            reason = f"lost track of the provider job: {describe_exception(exc)}"
            deps.journal.end(
                job.id, JobState.FAILED, f"failed: {reason}", source=SOURCE, reason=reason, reason_class="provider"
            )
            return
        except HasteError as exc:
            # Transient errors, and a backend that cannot start right now (a
            # settings fix may bring it back): keep polling until the deadline.
            self._note(version, f"status check failed, will retry: {describe_exception(exc)}", chain)
            return
        if job.moving is not None and job.state is JobState.RUNNING and status.state is not ComputeState.SUCCEEDED:
            self._leave(version, status, chain)  # leaving its backend: a crash or a redelivery resumes here
            return
        if status.state.terminal:
            self._finish.ended(version, status, message)
            return
        if job.state is JobState.CANCEL_REQUESTED:
            deps.cancel_provider(job.handle, job, "the next poll")
        queued = status.state is ComputeState.QUEUED and job.state is JobState.RUNNING
        if not (queued and self._moved_on(version, status, chain)):
            self._progress(version, status, chain)

    # -- when compute does not come -----------------------------------------------------

    def _moved_on(self, version: Versioned, status: ComputeStatus, chain: bool) -> bool:
        """A queued job that waited enough (compute/capacity.py): leaving for its next backend (``auto``),
        else failed with the provider's reason. False: it keeps waiting."""
        deps = self._deps
        job = version.job
        assert job.handle is not None
        waited = (deps.clock() - (job.started_at or job.created_at)).total_seconds()
        limit = deps.settings.queue_limit_s(job.handle.backend)
        line = capacity.verdict(job.handle.backend, waited, limit, status.capacity)
        if line is None:
            return False
        if self._failover.begin(version, line):
            self._leave(version, status, chain)
            return True
        deps.cancel_provider(job.handle, job, "the reconciler's orphan sweep")
        kind: ReasonClass = "deadline" if waited > limit else "provider"
        deps.journal.end(job.id, JobState.FAILED, f"failed: {line}", source=SOURCE, reason=line, reason_class=kind)
        return True

    def _leave(self, version: Versioned, status: ComputeStatus, chain: bool) -> None:
        """Cancel the provider job of a job leaving its backend; once it is confirmed gone, move the job."""
        job = version.job
        assert job.handle is not None
        if not status.state.terminal:
            self._deps.cancel_provider(job.handle, job, "the next poll")
            try:
                status = self._deps.service.status(job.handle)
            except HasteError as exc:  # not confirmed yet: the next poll asks again
                log.info("status of %s after its cancel: %s", job.id, describe_exception(exc), extra=job_fields(job))
        if status.state in (ComputeState.CANCELLED, ComputeState.FAILED):
            self._failover.finish(job, status)
        else:  # not gone yet, or it ran after all: the next poll asks again (and post-processes a success)
            self._progress(version, status, chain)

    # -- while running ----------------------------------------------------------------

    def _progress(self, version: Versioned, status: ComputeStatus, chain: bool) -> None:
        deps = self._deps
        job = version.job
        note = status.detail or ("running" if status.state is ComputeState.RUNNING else "waiting to start")
        waiting = None if status.state is not ComputeState.QUEUED else capacity.waiting_text(status.capacity)
        seq = job.poll_seq
        assert job.handle is not None
        path = deps.processors[job.workload].progress_log_path
        lines, consumed = progress_lines(deps.service.read_output_tail(job.handle, path, job.progress_offset))
        pending = self._next_poll(job, chain)

        def change(current: Job) -> Job | None:
            advance = chain and current.poll_seq == seq
            changed = note != current.detail or status.progress != current.progress
            rewait = waiting != current.waiting_for_compute
            fresh = lines if current.progress_offset == job.progress_offset else []  # else another poll copied them
            recovered = current.last_error is not None  # this status check worked: the retried error is past
            ran = told(current, status)  # the runs it reports: kept in this write, a reason for one if new
            if not advance and not changed and not fresh and not recovered and not rewait and not news(current, ran):
                return None
            current = ran
            updates: dict[str, Any] = {
                "detail": note,
                "progress": status.progress,
                "last_error": None,
                "waiting_for_compute": waiting,
            }
            if advance:
                updates["poll_seq"] = seq + 1
                updates.update(pending.fields() if pending else {})
                updates["attempts"] = current.attempts.model_copy(update={"poll": current.attempts.poll + 1})
            # The workload's lines first: they were written before this poll noticed anything.
            limit = deps.settings.pipeline.history_limit
            updated = with_workload_lines(current, fresh, now=deps.clock(), limit=limit)
            if changed:
                updated = deps.event(updated, message=note, source=SOURCE)
            if fresh:
                updates["progress_offset"] = current.progress_offset + consumed
            return updated.model_copy(update=updates)

        deps.journal.update(job.id, change, known=version)
        if status.state is ComputeState.RUNNING and job.detail in (None, "waiting to start") and note != job.detail:
            meter.provider_started(job, deps.clock())  # the first poll that sees it run

    def _note(self, version: Versioned, message: str, chain: bool) -> None:
        """A transient problem: record it once, keep the chain alive."""
        deps = self._deps
        job = version.job
        seq = job.poll_seq
        pending = self._next_poll(job, chain)

        def change(current: Job) -> Job | None:
            if current.state.terminal:
                return None
            updates: dict[str, Any] = {"last_error": message}
            if chain and current.poll_seq == seq:
                updates["poll_seq"] = seq + 1
                updates.update(pending.fields() if pending else {})
            if current.last_error == message:
                return current.model_copy(update=updates)
            return deps.event(current, message=message, source=SOURCE, **updates)

        deps.journal.update(job.id, change, known=version)

    def _next_poll(self, job: Job, chain: bool) -> PendingPoll | None:
        """Extend the chain (a chain message only), before the write that advances it names the new message."""
        if not chain:
            return None
        seq = job.poll_seq + 1
        return self._deps.chain.send(job.id, seq, self._deps.chain.delay(seq, job))
