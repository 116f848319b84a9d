"""Finishing a job whose provider job ended: post-process a success, record a failure or a cancellation.

The poll step (:mod:`hastegeo.pipeline.poll`) hands a job here once the provider
reports its job ended, or when an earlier post-processing did not complete; from
here the job goes to its end without going back. Post-processing reads the files
through :class:`~hastegeo.pipeline.outputs.OutputReads` and gets back, as values,
what the operator should know and whether the compute node was gone (then cleanup
leaves that node alone). A re-run after a crash finds what the first run did: the
follow-on jobs under keys derived from this job, the ending write refused by ETag.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from hastegeo.compute.contract import ComputeState, ComputeStatus
from hastegeo.models.job import Job, JobRequest
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import JobAcceptor
from hastegeo.pipeline.admission import HandOver
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.journal import Change, Written
from hastegeo.pipeline.outputs import OutputReads
from hastegeo.pipeline.progress import progress_lines, with_workload_lines
from hastegeo.pipeline.usage import told
from hastegeo.store.jobs import Versioned
from hastegeo.store.queues import POLL_QUEUE, JobMessage
from hastegeo.telemetry import meter, tracer
from hastegeo.utils.errors import HasteError, describe_exception
from hastegeo.workloads.processor import PostprocessError

SOURCE = "poll"


class FinishStep:
    def __init__(self, deps: PipelineDeps, acceptor: JobAcceptor, hand_over: HandOver | None = None) -> None:
        """``hand_over`` submits a job that got the seat this job's end freed (ADR 0032), in this step,
        after the write that freed it (none: the jobs get submit messages)."""
        self._deps = deps
        self._acceptor = acceptor
        self._hand_over = hand_over

    def ended(self, version: Versioned, status: ComputeStatus, message: JobMessage) -> None:
        """The provider reports the job of ``version`` ended (``status``); ``message`` is the one being handled."""
        deps = self._deps
        job = version.job
        assert job.handle is not None
        if status.state is not ComputeState.SUCCEEDED:
            if status.state is ComputeState.CANCELLED:
                state, line, reason = JobState.CANCELLED, f"cancelled: {status.reason or 'by request'}", status.reason
            else:
                reason = status.reason or f"the workload failed (exit code {status.exit_code})"
                state, line = JobState.FAILED, f"failed: {reason}"
            ending = deps.journal.ending(state, line, source=SOURCE, reason=reason, before=lambda j: told(j, status))
            if self._write(job.id, ending).wrote:
                self._chain_ended(job, message)
            deps.service.cleanup(job.handle)
            return
        began = deps.clock()

        def start(current: Job) -> Job:
            """``current`` moved to post-processing, dated ``began`` (unchanged unless running or cancelling)."""
            if current.state not in (JobState.RUNNING, JobState.CANCEL_REQUESTED):
                return current
            current = told(current, status)  # the runs it ended with, priced when it ends
            late = " (it completed before the cancellation took effect)"
            late = late if current.state is JobState.CANCEL_REQUESTED else ""
            if status.detail and status.detail != current.detail:
                # What happened since the last poll (a preemption, say) still deserves its line.
                current = deps.event(current, status.detail, SOURCE, at=began)
            line = f"workload finished (exit code {status.exit_code}){late}; post-processing"
            return deps.event(current, line, SOURCE, JobState.POSTPROCESSING, at=began)

        if self._quick(job):
            # One write for both moves (ADR 0016): a crash before it leaves the job running, and the
            # next poll finds the provider's job ended again and post-processes it again.
            self._finish(version, message, start=start, began=began)
            return

        def moving(current: Job) -> Job | None:
            moved = start(current)
            return None if moved is current else moved

        moved = self._write(job.id, moving, known=version)
        if moved.wrote:  # otherwise another delivery got there first and is finishing it
            meter.workload_ended(job, began)
            self._finish(moved.version, message)

    def resume(self, version: Versioned, message: JobMessage) -> None:
        """Post-process a job already in ``postprocessing`` (an earlier attempt did not complete)."""
        self._finish(version, message)

    def _quick(self, job: Job) -> bool:
        """Post-processing needs no ``postprocessing`` write of its own before it (ADR 0016).

        It can be re-run from the provider's status after a crash (whatever its cleanup removed), and
        it starts no follow-on job (whose existence a client could see before the parent moved on).
        """
        assert job.handle is not None
        processor = self._deps.processors[job.workload]
        return self._deps.service.status_outlives_cleanup(job.handle.backend) and not processor.follow_ons(job)

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
        reads = OutputReads(deps.service, job.handle)
        try:
            result = processor.postprocess(job, reads.access, job.handle.output)
        except PostprocessError as exc:
            line = f"post-processing failed: {exc}"
            failing = deps.journal.ending(JobState.FAILED, line, source="postprocess", reason=str(exc), before=start)
            ended = self._write(job.id, failing).wrote
            if ended:
                self._chain_ended(job, message)
            return ended
        progress = reads.read(processor.progress_log_path) or b""
        # The lines not yet copied while the job ran (all of them, for a fast job).
        last_lines, _ = progress_lines(progress[job.progress_offset :] + b"\n")
        # Follow-ons are created before the success is written, under keys
        # derived from this job: a crash and a retry find them, never twice.
        follow_ons = self._start_follow_ons(job, processor.follow_ons(job))
        note = deps.service.cleanup(job.handle, reads.provider_gone)
        notes = reads.notes

        def done(current: Job) -> Job | None:
            updated = start(current)
            if updated.state is not JobState.POSTPROCESSING:
                return None
            for line in notes:
                updated = deps.event(updated, message=line, source="postprocess")
            limit = deps.settings.pipeline.history_limit
            updated = with_workload_lines(updated, last_lines, now=deps.clock(), limit=limit)  # the running band
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

        finished = self._write(job.id, done, known=version)
        if finished.wrote:  # this call wrote the success (another delivery may have)
            self._chain_ended(finished.job, message)
        return finished.wrote

    def _write(self, job_id: str, change: Change, *, known: Versioned | None = None) -> Written:
        """Write ``change``; the jobs that got the admission seat it freed are submitted here, after it (ADR 0032)."""
        written = self._deps.journal.update(job_id, change, known=known, hand_over=self._hand_over is not None)
        if written.admitted and self._deps.admission is not None and self._hand_over is not None:
            self._deps.admission.hand_over(written.admitted, self._hand_over)
        return written

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

    def _chain_ended(self, job: Job, message: JobMessage) -> None:
        """The job has just ended: delete the chain's pending message before it arrives (best effort).

        Not when the message being handled is that one (the host deletes it when the step returns).
        """
        if job.poll_message is not None and not (message.kind == "poll" and message.poll_seq == job.poll_seq):
            self._deps.queues.delete(POLL_QUEUE, job.poll_message)


def _as_is(job: Job) -> Job:
    return job
