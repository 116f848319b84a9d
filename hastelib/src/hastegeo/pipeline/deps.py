"""What every pipeline step needs, and the pure helpers they share."""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hastegeo.compute.contract import BlobLocation, ComputeJobHandle
from hastegeo.compute.router import ComputeRouter
from hastegeo.compute.service import ExecutionService
from hastegeo.config import Settings
from hastegeo.models.history import append_event, make_event
from hastegeo.models.job import Job, QueuedMessage
from hastegeo.models.states import JobState, transition
from hastegeo.pipeline.admission import Admission
from hastegeo.store.jobs import JobStore, Versioned
from hastegeo.store.queues import POLL_QUEUE, JobMessage, QueueSender
from hastegeo.telemetry import meter, tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.telemetry.meter import ReasonClass
from hastegeo.utils.errors import JobNotFoundError, describe_exception
from hastegeo.workloads.processor import Processor, SpecInputs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingPoll:
    """A poll-chain message just sent, as the job records it: to delete it early, and to know when it is due."""

    message: QueuedMessage | None
    due_at: datetime

    def fields(self) -> dict[str, Any]:
        return {"poll_message": self.message, "poll_due_at": self.due_at}


@dataclass(frozen=True)
class PipelineDeps:
    settings: Settings
    store: JobStore
    queues: QueueSender
    router: ComputeRouter
    service: ExecutionService
    processors: dict[str, Processor]
    clock: Callable[[], datetime]
    admission: Admission | None = None  # seats before a provider (ADR 0032); None: no limits

    @property
    def spec_inputs(self) -> SpecInputs:
        return SpecInputs(
            inputs_container=self.settings.storage.inputs_container,
            outputs_container=self.settings.storage.outputs_container,
            project_of=self.project_of,
        )

    def project_of(self, job_id: str) -> str | None:
        """The project of job ``job_id``, or None when there is no such job."""
        job = self.store.find(job_id)
        return None if job is None else job.project_id

    def output_location(self, job_id: str) -> BlobLocation:
        return BlobLocation(container=self.settings.storage.outputs_container, path=f"jobs/{job_id}")

    def event(
        self,
        job: Job,
        message: str,
        source: str,
        state: JobState | None = None,
        *,
        at: datetime | None = None,
        **fields: Any,
    ) -> Job:
        """:func:`record` with this pipeline's history limit, at ``at`` (a step's start) or now."""
        return record(
            job,
            now=at or self.clock(),
            limit=self.settings.pipeline.history_limit,
            message=message,
            source=source,
            state=state,
            **fields,
        )

    def end_job(
        self,
        job_id: str,
        state: JobState,
        message: str,
        *,
        source: str,
        reason: str | None,
        reason_class: ReasonClass = "workload",
        before: Callable[[Job], Job] | None = None,
    ) -> bool:
        """Move a job to a terminal ``state`` with one event, unless it has already ended.

        ``reason_class`` says which kind of failure it is, for the metrics and the span.
        ``before`` (pure) adds what happened first to the same write (a move not stored yet).
        Returns True when this call ended it (another writer may have got there first).
        """

        def change(job: Job) -> Job | None:
            if job.state.terminal:
                return None
            return self.event(before(job) if before else job, message, source, state, reason=reason)

        update = self.store.update(job_id, change)
        if update.wrote:
            ended_job(update.job, reason_class)
        return update.wrote

    def cancel_provider(self, handle: ComputeJobHandle, job: Job | str, retried_by: str) -> None:
        """Ask the provider to stop the job of ``handle`` (``job``, or its id); a failure is logged, never raised.

        Every caller has someone who tries again (``retried_by``, quoted in the warning): the
        next poll, or the reconciler's orphan sweep. Any exception is contained, not only the
        contract's: a failed cancel must not undo the write that made it necessary.
        """
        try:
            self.service.cancel(handle)
        except Exception as exc:
            fields = job_fields(job) if isinstance(job, Job) else job_fields(job_id=job, backend=handle.backend)
            job_id = job.id if isinstance(job, Job) else job
            log.warning(
                "cancel of %s on %s failed, %s tries again: %s",
                job_id,
                handle.backend,
                retried_by,
                describe_exception(exc),
                extra=fields,
            )

    @contextmanager
    def step(
        self, name: str, message: JobMessage, attributes: Mapping[str, Any] | None = None
    ) -> Iterator[Versioned | None]:
        """The step's span in the job's trace, and the job as stored with its ETag (None: no such job).

        The span is the child of the message's ``traceparent``. A message without one (a
        nudge, a message the reconciler re-sent, one sent while tracing was off) continues
        the job's own trace, taken from the read the step needs anyway: that read happens
        untraced, before the span, instead of a second read only to find the trace.
        """
        version: Versioned | None = None
        parent = message.traceparent
        if not parent:
            with tracer.untraced():
                version = self._read(message.job_id)
            parent = None if version is None else version.job.trace_parent
        with tracer.step_span(name, traceparent=parent, job_id=message.job_id, attributes=attributes):
            if message.traceparent:
                version = self._read(message.job_id)
            yield version

    def _read(self, job_id: str) -> Versioned | None:
        try:
            return self.store.read(job_id)
        except JobNotFoundError:
            return None

    def poll_delay(self, seq: int) -> float:
        pipeline = self.settings.pipeline
        return float(min(pipeline.poll_initial_s * pipeline.poll_backoff**seq, pipeline.poll_max_s))

    def send_poll(self, job_id: str, seq: int, delay_s: float) -> PendingPoll:
        """Send the poll chain's message number ``seq``, visible after ``delay_s``."""
        sent = self.queues.send(POLL_QUEUE, JobMessage(job_id=job_id, kind="poll", poll_seq=seq), delay_s)
        return PendingPoll(sent, self.clock() + timedelta(seconds=delay_s))


def ended_job(job: Job, reason_class: ReasonClass = "workload") -> None:
    """Count, trace and log a job that one write has just ended (call once per job, from that write)."""
    meter.job_ended(job, reason_class)
    tracer.annotate(job)  # the step's span ends with the job's final state (the "stuck jobs" query reads it)
    if job.state is JobState.FAILED:
        tracer.fail(job.reason or "failed", reason_class)
    log.info(
        "job %s %s: %s",
        job.id,
        job.state.value,
        job.reason or "",
        extra=job_fields(job, reason_class=reason_class if job.state is JobState.FAILED else None),
    )


def record(
    job: Job,
    *,
    now: datetime,
    limit: int,
    message: str,
    source: str,
    state: JobState | None = None,
    **fields: Any,
) -> Job:
    """Return ``job`` moved to ``state`` (checked by the state machine) with one history event appended."""
    new_state = job.state if state is None or state == job.state else transition(job.state, state)
    history, folded = append_event(job.history, job.history_folded, make_event(now, new_state, message, source), limit)
    update: dict[str, Any] = {
        "state": new_state,
        "history": history,
        "history_folded": folded,
        "updated_at": now,
        **fields,
    }
    if new_state.terminal and job.finished_at is None:
        update.setdefault("finished_at", now)
    return job.model_copy(update=update)


def new_job_id() -> str:
    """Time-ordered, lowercase, safe as a provider id on every backend."""
    return f"{time.time_ns() // 1_000_000:011x}{secrets.token_hex(6)}"


def keyed_job_id(project_id: str, idempotency_key: str) -> str:
    """The same project and key always name the same job, which makes a retried POST safe."""
    return "k" + hashlib.sha256(f"{project_id}\x00{idempotency_key}".encode()).hexdigest()[:22]
