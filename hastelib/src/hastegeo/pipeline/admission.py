"""Admission before a provider (ADR 0032): hold a job while its project is at a limit or its backend is full.

Three places use it, each safe to repeat:

- the submit step asks for a seat (:meth:`Admission.seat`) before it calls the
  adapter; a job without one stays ``queued`` and its history says why, once per
  reason (``waiting: project p1 has 20 of 20 running jobs``);
- the end of a job frees its seat: the store's publisher of job events calls
  :meth:`Admission.releasing` after every write that ended a job (ADR 0024: at
  least once, caught up by the reconciler's sweep), and the jobs that got the
  seats get their submit message at once, projects in turn;
- the reconciler repairs the book from the unfinished jobs it reads anyway
  (:meth:`Admission.repair`): a seat whose job has ended is freed, and a job
  whose submit message was lost after it got a seat is re-sent by the sweep that
  re-submits quiet queued jobs.

With no limit set for a backend, its jobs never touch the book.
"""

from __future__ import annotations

import logging
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
        if not self._limits.apply_to(backend):
            return None
        seat = Seat(job_id, project, backend, self._clock())
        reason, admitted = self._book.change(lambda book: take(book, seat, self._limits))
        self._send(admitted)
        return reason

    def free(self, job_ids: Collection[str]) -> list[str]:
        """The jobs ``job_ids`` ended: free their seats and send the jobs that got one on their way (returned)."""
        if not self.active or not job_ids:
            return []
        admitted = self._book.change(lambda book: free(book, job_ids, self._limits))
        self._send(admitted)
        return admitted

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
        self._send(admitted)
        return gone

    def releasing(self, publish: Publish) -> Publish:
        """``publish`` that first frees the seat of a job whose write ended it (the store calls it after it)."""

        def publish_and_free(job: Job, changes: list[StateChange]) -> None:
            if job.state.terminal:
                try:
                    self.free([job.id])
                except ConflictError as exc:  # to the store, a failed publication: its sweep tries again
                    raise AzureError(str(exc)) from exc
            publish(job, changes)

        return publish_and_free

    def _send(self, job_ids: list[str]) -> None:
        for job_id in job_ids:
            self._queues.send(SUBMIT_QUEUE, JobMessage(job_id=job_id, kind="submit"))
        if job_ids:
            log.info("admission: %d job(s) got a seat: %s", len(job_ids), ", ".join(job_ids[:10]))


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
