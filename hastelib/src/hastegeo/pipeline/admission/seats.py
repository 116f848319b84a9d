"""Admission before a provider (ADR 0032): hold a job while its project is at a limit or its backend is full.

Three callers, each safe to repeat:

- the submit step asks for a seat (:meth:`Admission.seat`) before it calls the
  adapter; a job without one stays ``queued`` and its history says why, once per
  reason (``waiting: project p1 has 20 of 20 running jobs``);
- the job journal (:mod:`hastegeo.pipeline.journal`) frees a job's seat after the
  write that moved it out of its provider (to post-processing, or to its end) is
  stored and its events are out (:meth:`Admission.free`): the one place a seat is
  freed. The jobs that got the freed seats are handed to the caller's ``hand_over``
  (the poll step submits them itself, so a freed seat does not wait for a queue's
  round trip) or get a submit message;
- the reconciler repairs the book from the unfinished jobs it reads anyway
  (:meth:`Admission.repair`): a seat whose job has ended unseen (a crash between
  the ending write and the journal freeing its seat) is freed, and a job whose
  submit message was lost after it got a seat is re-sent by the sweep that
  re-submits quiet queued jobs.

With no limit set for a backend, its jobs never touch the book.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime

from hastegeo.pipeline.admission.book import AdmissionBook
from hastegeo.pipeline.admission.fairshare import Book, Limits, Seat, forget, free, take
from hastegeo.settings.app import Settings
from hastegeo.store.queues import SUBMIT_QUEUE, JobMessage, QueueSender
from hastegeo.utils.errors import ConflictError

log = logging.getLogger(__name__)
HandOver = Callable[[str], None]  # submits the job with this id, seated, now (the submit step, in this process)


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
        self._dispatch(admitted, None)
        return reason

    def free(self, job_ids: Collection[str], *, send: bool = True) -> list[str]:
        """The jobs ``job_ids`` left their provider: free their seats; the jobs that got one (returned) get
        submit messages, or, without ``send``, are the caller's to hand over (:meth:`hand_over`).

        Raises:
            ConflictError: the book kept changing.
            AzureError: storage failed.
        """
        if not self.active or not job_ids:
            return []
        admitted = self._book.change(lambda book: free(book, job_ids, self._limits))
        if send:
            self._dispatch(admitted, None)
        return admitted

    def hand_over(self, job_ids: Collection[str], submit: HandOver) -> None:
        """Submit the jobs that just got a seat, here (``submit``), each as seated; a failure sends its message."""
        self._dispatch(list(job_ids), submit)

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

    def _dispatch(self, job_ids: list[str], hand_over: HandOver | None) -> None:
        """Send each job that got a seat on its way: submitted here by ``hand_over``, else by a submit message.

        ``hand_over`` submits the job as seated (the change that freed the seat gave it this job, so
        its submit step does not ask the book again). A hand-over that fails for any reason falls back
        to the message (the queue's retries take it from there). Nothing nests: the handed-over
        submission's own writes hand nothing over (the submit step passes no ``hand_over``), so a seat
        its job frees at once goes as a message.
        """
        for job_id in job_ids:
            if hand_over is not None:
                try:
                    hand_over(job_id)
                    continue
                except Exception as exc:  # any failure: the submit message below retries it
                    log.info("admission: job %s not handed over (%s); sending its submit message", job_id, exc)
            self._queues.send(SUBMIT_QUEUE, JobMessage(job_id=job_id, kind="submit"))
        if job_ids:
            log.info("admission: %d job(s) got a seat: %s", len(job_ids), ", ".join(job_ids[:10]))
