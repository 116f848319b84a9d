"""The poll step (queue ``jobs-poll``): follow the provider job, then post-process its outputs.

One poll chain per job: each ``poll`` message carries the chain's sequence
number, and a message whose number is not the job's current one is a
duplicate and is dropped. The next message is sent before the sequence
advances, so a crash in between yields a duplicate (dropped later), never a
broken chain. ``nudge`` messages look once and never extend the chain.

A provider that is unreachable does not burn the message's delivery count:
the chain keeps polling with backoff, and only the job's deadline fails it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from hastegeo.compute import capacity
from hastegeo.compute.contract import ComputeState, ComputeStatus
from hastegeo.models.history import add_workload_events
from hastegeo.models.job import Job, JobRequest
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import JobAcceptor
from hastegeo.pipeline.deadlines import expire
from hastegeo.pipeline.deps import PendingPoll, PipelineDeps, ended_job
from hastegeo.pipeline.failover import Failover
from hastegeo.pipeline.outputs import OutputReader
from hastegeo.pipeline.progress import ProgressLine, progress_lines
from hastegeo.processors.base import PostprocessError
from hastegeo.store.jobs import Versioned
from hastegeo.store.queues import POLL_QUEUE, JobMessage
from hastegeo.telemetry import meter, tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.telemetry.meter import ReasonClass
from hastegeo.utils.errors import HasteError, TerminalBackendError, describe_exception

log = logging.getLogger(__name__)
SOURCE = "poll"


class PollStep:
    def __init__(self, deps: PipelineDeps, outputs: OutputReader, acceptor: JobAcceptor) -> None:
        self._deps = deps
        self._failover = Failover(deps)
        self._outputs = outputs
        self._acceptor = acceptor

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
                deps.queues.send(POLL_QUEUE, message, deps.poll_delay(0))
            return
        if job.state is JobState.POSTPROCESSING:
            self._finish(version, message)  # an earlier post-processing attempt did not complete
            return
        if deps.clock() > job.deadline_at:
            expire(deps, job, SOURCE)
            return
        try:
            status = deps.service.status(job.handle)
        except TerminalBackendError as exc:
            reason = f"lost track of the provider job: {describe_exception(exc)}"
            deps.end_job(
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
        if not status.state.terminal:
            if job.state is JobState.CANCEL_REQUESTED:
                self._cancel_provider(job)
            queued = status.state is ComputeState.QUEUED and job.state is JobState.RUNNING
            if queued and self._moved_on(version, status, chain):
                return
            self._progress(version, status, chain)
            return
        self._ended(version, status, message)

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
        self._cancel_provider(job)
        kind: ReasonClass = "deadline" if waited > limit else "provider"
        deps.end_job(job.id, JobState.FAILED, f"failed: {line}", source=SOURCE, reason=line, reason_class=kind)
        return True

    def _leave(self, version: Versioned, status: ComputeStatus, chain: bool) -> None:
        """Cancel the provider job of a job leaving its backend; once it is confirmed gone, move the job."""
        job = version.job
        assert job.handle is not None
        if not status.state.terminal:
            self._cancel_provider(job)
            try:
                status = self._deps.service.status(job.handle)
            except HasteError as exc:  # not confirmed yet: the next poll asks again
                log.info("status of %s after its cancel: %s", job.id, describe_exception(exc), extra=job_fields(job))
        if status.state in (ComputeState.CANCELLED, ComputeState.FAILED):
            self._failover.finish(job)
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
            if not advance and not changed and not fresh and not recovered and not rewait:
                return None
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
            updated = self._workload_lines(current, fresh)
            if changed:
                updated = deps.event(updated, message=note, source=SOURCE)
            if fresh:
                updates["progress_offset"] = current.progress_offset + consumed
            return updated.model_copy(update=updates)

        deps.store.update(job.id, change, known=version)
        if status.state is ComputeState.RUNNING and job.detail in (None, "waiting to start") and note != job.detail:
            meter.provider_started(job, deps.clock())  # the first poll that sees it run

    def _workload_lines(self, job: Job, lines: list[ProgressLine]) -> Job:
        """``job`` with the workload's progress lines in its history, at the times they were written."""
        if not lines:
            return job
        now = self._deps.clock()
        history, folded = add_workload_events(
            job.history,
            job.history_folded,
            [(line.at, line.text) for line in lines],
            now=now,
            limit=self._deps.settings.pipeline.history_limit,
        )
        return job.model_copy(update={"history": history, "history_folded": folded, "updated_at": now})

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

        deps.store.update(job.id, change, known=version)

    def _next_poll(self, job: Job, chain: bool) -> PendingPoll | None:
        """Extend the chain (a chain message only), before the write that advances it names the new message."""
        if not chain:
            return None
        seq = job.poll_seq + 1
        return self._deps.send_poll(job.id, seq, self._deps.poll_delay(seq))

    def _chain_ended(self, job: Job, message: JobMessage) -> None:
        """The job has just ended: delete the chain's pending message before it arrives (best effort).

        Not when the message being handled is that one (the host deletes it when the step returns).
        """
        if job.poll_message is not None and not (message.kind == "poll" and message.poll_seq == job.poll_seq):
            self._deps.queues.delete(POLL_QUEUE, job.poll_message)

    # -- at the end ---------------------------------------------------------------------

    def _ended(self, version: Versioned, status: ComputeStatus, message: JobMessage) -> None:
        deps = self._deps
        job = version.job
        if status.state is ComputeState.CANCELLED:
            line = f"cancelled: {status.reason or 'by request'}"
            if deps.end_job(job.id, JobState.CANCELLED, line, source=SOURCE, reason=status.reason):
                self._chain_ended(job, message)
            self._cleanup(job)
            return
        if status.state is ComputeState.FAILED:
            reason = status.reason or f"the workload failed (exit code {status.exit_code})"
            if deps.end_job(job.id, JobState.FAILED, f"failed: {reason}", source=SOURCE, reason=reason):
                self._chain_ended(job, message)
            self._cleanup(job)
            return
        began = deps.clock()

        def start(current: Job) -> Job:
            """``current`` moved to post-processing, dated ``began`` (unchanged unless running or cancelling)."""
            if current.state not in (JobState.RUNNING, JobState.CANCEL_REQUESTED):
                return current
            late = (
                " (it completed before the cancellation took effect)"
                if current.state is JobState.CANCEL_REQUESTED
                else ""
            )
            if status.detail and status.detail != current.detail:
                # What happened since the last poll (a preemption, say) still deserves its line.
                current = deps.event(current, status.detail, SOURCE, at=began)
            return deps.event(
                current,
                f"workload finished (exit code {status.exit_code}){late}; post-processing",
                SOURCE,
                JobState.POSTPROCESSING,
                at=began,
            )

        if self._quick(job):
            # One write for both moves (ADR 0016): a crash before it leaves the job running, and the
            # next poll finds the provider's job ended again and post-processes it again.
            self._finish(version, message, start=start, began=began)
            return

        def moving(current: Job) -> Job | None:
            moved = start(current)
            return None if moved is current else moved

        moved = deps.store.update(job.id, moving, known=version)
        if moved.wrote:  # otherwise another delivery got there first and is finishing it
            meter.workload_ended(job, began)
            self._finish(moved.version, message)

    def _quick(self, job: Job) -> bool:
        """Post-processing needs no ``postprocessing`` write of its own before it (ADR 0016).

        It can be re-run from the provider's status after a crash (whatever its cleanup removed), and
        it starts no follow-on job (whose existence a client could see before the parent moved on).
        """
        assert job.handle is not None
        return self._deps.service.status_outlives_cleanup(job.handle.backend) and not self._deps.processors[
            job.workload
        ].follow_ons(job)

    def _finish(
        self,
        version: Versioned,
        message: JobMessage,
        *,
        start: Callable[[Job], Job] | None = None,
        began: datetime | None = None,
    ) -> None:
        """Post-process and end the job; ``start`` moves it to post-processing in the same write (see _quick)."""
        started = time.perf_counter()
        with tracer.step_span("postprocess", traceparent=None, job_id=version.job.id, kind=tracer.INTERNAL):
            tracer.annotate(version.job)
            ended = self._postprocess(version, message, start or _as_is)
        if ended:  # a duplicate delivery that found the job done is not a second post-processing
            if start is not None and began is not None:
                meter.workload_ended(version.job, began)
            meter.postprocessed(version.job, time.perf_counter() - started)

    def _postprocess(self, version: Versioned, message: JobMessage, start: Callable[[Job], Job]) -> bool:
        """Post-process; True when this call ended the job. ``start`` is applied first in the ending write."""
        deps = self._deps
        job = version.job
        assert job.handle is not None
        processor = deps.processors[job.workload]
        notes: list[str] = []
        gone: list[str] = []  # why the provider could not serve a file: cleanup need not touch that node
        access = self._outputs.open(job.handle, notes.append, gone.append)
        try:
            result = processor.postprocess(job, access, job.handle.output)
        except PostprocessError as exc:
            ended = deps.end_job(
                job.id,
                JobState.FAILED,
                f"post-processing failed: {exc}",
                source="postprocess",
                reason=str(exc),
                reason_class="workload",
                before=start,
            )
            if ended:
                self._chain_ended(job, message)
            return ended
        progress = access.read(processor.progress_log_path) or b""
        # The lines not yet copied while the job ran (all of them, for a fast job).
        last_lines, _ = progress_lines(progress[job.progress_offset :] + b"\n")
        # Follow-ons are created before the success is written, under keys
        # derived from this job: a crash and a retry find them, never twice.
        follow_ons = self._start_follow_ons(job, processor.follow_ons(job))
        note = deps.service.cleanup(job.handle, gone[0] if gone else None)

        def done(current: Job) -> Job | None:
            updated = start(current)
            if updated.state is not JobState.POSTPROCESSING:
                return None
            for line in dict.fromkeys(notes):  # once each, in order
                updated = deps.event(updated, message=line, source="postprocess")
            updated = self._workload_lines(updated, last_lines)  # into the running band, at their own times
            for line in follow_ons:
                updated = deps.event(updated, message=line, source="postprocess")
            if note:
                updated = deps.event(updated, message=f"cleanup skipped: {note}", source="cleanup")
            return deps.event(
                updated,
                message=f"succeeded with {len(result.outputs)} output(s)",
                source="postprocess",
                state=JobState.SUCCEEDED,
                outputs=result.outputs,
                summary=result.summary,
                progress=1.0,
            )

        finished = deps.store.update(job.id, done, known=version)
        if finished.wrote:  # this call wrote the success (another delivery may have)
            ended_job(finished.job)
            self._chain_ended(finished.job, message)
        return finished.wrote

    def _start_follow_ons(self, job: Job, requests: list[JobRequest]) -> list[str]:
        lines = []
        for index, request in enumerate(requests):
            key = f"follow-on:{job.id}:{index}:{request.workload}"
            try:
                accepted = self._acceptor.accept(request, idempotency_key=key, parent=job)
            except HasteError as exc:
                lines.append(f"follow-on {request.workload} job not started: {describe_exception(exc)}")
                continue
            lines.append(f"started follow-on {request.workload} job {accepted.job.id} on {accepted.job.backend}")
        return lines

    def _cleanup(self, job: Job) -> None:
        if job.handle is not None:
            self._deps.service.cleanup(job.handle)

    def _cancel_provider(self, job: Job) -> None:
        if job.handle is None:
            return
        try:
            self._deps.service.cancel(job.handle)
        except HasteError as exc:
            log.warning("cancel of %s failed: %s", job.id, describe_exception(exc), extra=job_fields(job))


def _as_is(job: Job) -> Job:
    return job
