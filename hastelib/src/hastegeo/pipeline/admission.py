"""Admission before a provider (ADR 0032): hold a job while its project is at a limit or its backend is full.

Three places use it, each safe to repeat:

- the submit step asks for a seat (:meth:`Admission.seat`) before it calls the
  adapter; a job without one stays ``queued`` and its history says why, once per
  reason (``waiting: project p1 has 20 of 20 running jobs``);
- the end of a job's provider job frees its seat: the poll step that sees it
  frees the seat before it post-processes (:meth:`Admission.provider_ended`), and
  the store's publisher of job events calls :meth:`Admission.releasing` after
  every write that moved a job to post-processing or to its end (ADR 0024: at
  least once, caught up by the reconciler's sweep; freeing twice changes
  nothing), and the jobs that got the seats go on their way at once,
  projects in turn: the pipeline's step that freed the seat submits them itself
  (``hand_over``), so a freed seat does not wait for a queue's round trip; a job
  it could not submit gets a submit message instead;
- the reconciler repairs the book from the unfinished jobs it reads anyway
  (:meth:`Admission.repair`): a seat whose job has ended is freed, and a job
  whose submit message was lost after it got a seat is re-sent by the sweep that
  re-submits quiet queued jobs.

With no limit set for a backend, its jobs never touch the book.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from datetime import datetime
from typing import TYPE_CHECKING

from azure.core.exceptions import AzureError

from hastegeo.compute.fairshare import Book, Limits, Seat, forget, free, take
from hastegeo.config import Settings
from hastegeo.models.changes import StateChange
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.store.admission import AdmissionBook
from hastegeo.store.jobs import Publish
from hastegeo.store.queues import SUBMIT_QUEUE, JobMessage, QueueSender
from hastegeo.utils.errors import ConflictError

if TYPE_CHECKING:
    from hastegeo.pipeline.deps import PipelineDeps
    from hastegeo.store.jobs import Versioned

log = logging.getLogger(__name__)
HandOver = Callable[[str], None]  # submits the job with this id now (the submit step, in this process)


def limits_of(settings: Settings) -> Limits:
    capacity = settings.capacity
    return Limits(
        total=capacity.project_max_running_total,
        per_backend={name: int(value) for name, value in capacity.project_max_running.items()},
        seats={name: int(value) for name, value in capacity.backend_max_running.items()},
    )


class Admission:
    def __init__(self, book: AdmissionBook, limits: Limits, queues: QueueSender, clock: Callable[[], datetime]) -> None:
        self._book, self._limits, self._queues, self._clock = book, limits, queues, clock

    @property
    def active(self) -> bool:
        """Whether any limit is set (else nothing ever reads or writes the book)."""
        return self._limits.total > 0 or any(self._limits.per_backend.values()) or any(self._limits.seats.values())

    def seat(self, job_id: str, project: str, backend: str) -> str | None:
        """None when the job may go to its provider now, else why it waits (it keeps its place in line).

        Raises:
            ConflictError: the book kept changing (the submit message comes back).
            AzureError: storage failed (likewise).
        """
        if not self._limits.apply_to(backend) or _handing.job_id == job_id:
            return None  # no limit here, or the change that freed a seat gave it this job a moment ago
        seat = Seat(job_id, project, backend, self._clock())
        reason, admitted = self._book.change(lambda book: take(book, seat, self._limits))
        self._dispatch(admitted, None)
        return reason

    def free(self, job_ids: Collection[str], hand_over: HandOver | None = None) -> list[str]:
        """The jobs ``job_ids`` ended: free their seats and send the jobs that got one on their way (returned)."""
        admitted = self._freed(job_ids)
        self._dispatch(admitted, hand_over)
        return admitted

    def provider_ended(self, job_id: str, hand_over: HandOver | None) -> None:
        """The poll step saw the provider's job of ``job_id`` end: its seat is free now, before post-processing.

        A failure here costs only time: the write that ends the job frees the seat as well.
        """
        try:
            self.free([job_id], hand_over)
        except (ConflictError, AzureError) as exc:
            log.info("admission: seat of job %s not freed yet (%s); its ending write frees it", job_id, exc)

    def _freed(self, job_ids: Collection[str]) -> list[str]:
        if not self.active or not job_ids:
            return []
        return self._book.change(lambda book: free(book, job_ids, self._limits))

    def repair(self, unfinished: Collection[str], listed_at: datetime) -> list[str]:
        """Free the seats of jobs that ended without freeing them (a crash, a lost publish); returns those jobs."""
        if not self.active:
            return []

        def change(book: Book) -> tuple[list[str], list[str]]:
            gone = forget(book, unfinished, listed_at)
            return gone, free(book, gone, self._limits)

        try:
            gone, admitted = self._book.change(change)
        except ConflictError as exc:  # the next pass repairs it
            log.info("admission: book not repaired this pass: %s", exc)
            return []
        self._dispatch(admitted, None)
        return gone

    def releasing(self, publish: Publish, hand_over: HandOver | None = None) -> Publish:
        """``publish`` that first frees the seat of a job whose write ended its provider job (the store calls it).

        The seat goes when the job moves to post-processing (or ends without it): the provider's
        capacity is free from then on, and post-processing (reading and copying outputs) needs none.
        The jobs that got the freed seats are handed over (``hand_over``, the pipeline's submit step)
        after the job's events went out; the API's store passes none, so an HTTP request never
        submits to a provider: its freed seats are sent as messages.
        """

        def publish_and_free(job: Job, changes: list[StateChange]) -> None:
            admitted: list[str] = []
            if job.state.terminal or job.state is JobState.POSTPROCESSING:
                try:
                    admitted = self._freed([job.id])
                except ConflictError as exc:  # to the store, a failed publication: its sweep tries again
                    raise AzureError(str(exc)) from exc
            try:
                publish(job, changes)
            finally:
                self._dispatch(admitted, hand_over)

        return publish_and_free

    def _dispatch(self, job_ids: list[str], hand_over: HandOver | None) -> None:
        """Send each job that got a seat on its way: submitted here by ``hand_over``, else by a submit message.

        The handed-over job's submit step does not read the book again: the change that freed the seat
        gave it this job (:meth:`seat`). A hand-over that fails for any reason falls back to the
        message (the queue's retries take it from there), and a hand-over is never nested: a job that
        the handed-over submission ends at once frees a seat in turn, and that one goes as a message,
        so a run of such jobs cannot recurse.
        """
        for job_id in job_ids:
            if hand_over is not None and _handing.job_id is None:
                _handing.job_id = job_id  # its submit step need not read the book again (seat)
                try:
                    hand_over(job_id)
                    continue
                except Exception as exc:  # any failure: the submit message below retries it
                    log.info("admission: job %s not handed over (%s); sending its submit message", job_id, exc)
                finally:
                    _handing.job_id = None
            self._queues.send(SUBMIT_QUEUE, JobMessage(job_id=job_id, kind="submit"))
        if job_ids:
            log.info("admission: %d job(s) got a seat: %s", len(job_ids), ", ".join(job_ids[:10]))


class _Handing(threading.local):
    job_id: str | None = None  # the job this thread is handing a seat to, while it does


_handing = _Handing()


def held(deps: PipelineDeps, version: Versioned, source: str) -> bool:
    """Whether the job must wait for a seat; its history then says why, once per reason (the submit step's gate)."""
    if deps.admission is None:
        return False
    job = version.job
    reason = deps.admission.seat(job.id, job.project_id, job.backend)
    if reason is None:
        return False

    def change(job: Job) -> Job | None:
        if job.state is not JobState.QUEUED or job.handle is not None or job.waiting_for_compute == reason:
            return None
        return deps.event(job, f"waiting: {reason}", source, waiting_for_compute=reason)

    deps.store.update(job.id, change, known=version)
    return True
