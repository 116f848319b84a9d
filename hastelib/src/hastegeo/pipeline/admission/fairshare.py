"""Admission before a provider: the most jobs a project may run, and projects in turn. Pure, no I/O.

Azure Batch takes a pool's tasks first come first served (job priority
aside) and an Azure ML workspace queues its jobs the same way, so a burst
given to either fills it, and one job of another project waits behind the
whole burst. The pipeline therefore holds jobs back itself (ADR 0032): the
:class:`Book` says which jobs hold a seat on a backend (given to the
provider, not yet ended) and which wait, oldest first. :func:`fill` gives
free seats out projects in turn (:func:`hastegeo.utils.turns.admission_order`,
the order the local node uses too), within three limits (:class:`Limits`):
the jobs one backend is given at once (its capacity), the jobs one project
may run on one backend, and across all backends.

The book holds job ids, never counts: taking a seat twice, or freeing one
twice, changes nothing, and a seat whose job has ended is found by comparing
the book with the unfinished jobs (:func:`forget`), so nothing drifts without
repair. The book is one document changed by ETag
(:mod:`hastegeo.pipeline.admission.book`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from hastegeo.compute.capacity import limit_reason
from hastegeo.utils.turns import admission_order


@dataclass(frozen=True)
class Limits:
    """``total``: running jobs per project on all backends; ``per_backend``: per project on one backend;
    ``seats``: jobs one backend is given at once. 0 or absent: no limit."""

    total: int = 0
    per_backend: Mapping[str, int] = field(default_factory=dict)
    seats: Mapping[str, int] = field(default_factory=dict)

    def apply_to(self, backend: str) -> bool:
        """Whether jobs for ``backend`` go through the book (no limit at all: they go straight on)."""
        return self.total > 0 or self.per_backend.get(backend, 0) > 0 or self.seats.get(backend, 0) > 0


@dataclass(frozen=True)
class Seat:
    """A job in the book: its project, the backend it is for, and since when it is there."""

    job_id: str
    project: str
    backend: str
    since: datetime


@dataclass
class Book:
    """Who holds a seat (by job id) and who waits for one, oldest first."""

    holding: dict[str, Seat] = field(default_factory=dict)
    waiting: list[Seat] = field(default_factory=list)

    def running(self, backend: str | None = None) -> Counter[str]:
        """Seats held per project, on ``backend`` or on all."""
        return Counter(s.project for s in self.holding.values() if backend is None or s.backend == backend)

    def on(self, backend: str) -> int:
        return sum(1 for s in self.holding.values() if s.backend == backend)


def why_waiting(book: Book, seat: Seat, limits: Limits) -> str | None:
    """The first limit that holds ``seat`` back, or None when a seat is free for it."""
    total = limit_reason(seat.project, book.running()[seat.project], limits.total)
    per = limit_reason(
        seat.project,
        book.running(seat.backend)[seat.project],
        limits.per_backend.get(seat.backend, 0),
        f" on {seat.backend}",
    )
    seats = limits.seats.get(seat.backend, 0)
    if total or per:
        return total or per
    if seats > 0 and book.on(seat.backend) >= seats:
        return f"all {seats} seats of {seat.backend} are taken; projects take turns"
    return None


def fill(book: Book, limits: Limits) -> list[str]:
    """Give free seats to waiting jobs, projects in turn; return the job ids that got one (the book changes)."""
    admitted: list[str] = []
    total = book.running()
    per = {backend: book.running(backend) for backend in {s.backend for s in book.waiting}}
    taken = Counter(s.backend for s in book.holding.values())

    def room(seat: Seat) -> bool:
        seats, most = limits.seats.get(seat.backend, 0), limits.per_backend.get(seat.backend, 0)
        return (
            (limits.total <= 0 or total[seat.project] < limits.total)
            and (most <= 0 or per[seat.backend][seat.project] < most)
            and (seats <= 0 or taken[seat.backend] < seats)
        )

    while able := [s for s in book.waiting if room(s)]:
        backend = able[0].backend  # the oldest able job's backend gives out its next seat
        candidates = [(s.job_id, s.project) for s in able if s.backend == backend]
        (picked,) = admission_order(candidates, per[backend], 1)
        seat = next(s for s in able if s.job_id == picked)
        book.waiting.remove(seat)
        book.holding[picked] = seat
        total[seat.project] += 1
        per[backend][seat.project] += 1
        taken[backend] += 1
        admitted.append(picked)
    return admitted


def take(book: Book, seat: Seat, limits: Limits) -> tuple[str | None, list[str]]:
    """``seat``'s job asks for a seat: (why it waits or None when it holds one, the other jobs that got one now).

    Idempotent: a job holding a seat on its backend keeps it; a job that moved to another backend
    gives its old seat up and queues for the new one; a waiting job keeps its place.
    """
    held = book.holding.get(seat.job_id)
    if held is not None and held.backend != seat.backend:
        del book.holding[seat.job_id]
        held = None
    if held is None:
        place = next((s for s in book.waiting if s.job_id == seat.job_id), None)
        if place is not None and place.backend != seat.backend:
            book.waiting.remove(place)
            place = None
        if place is None:
            book.waiting.append(seat)
    admitted = [job_id for job_id in fill(book, limits) if job_id != seat.job_id]
    if seat.job_id in book.holding:
        return None, admitted
    return why_waiting(book, seat, limits) or "waiting for a seat", admitted


def free(book: Book, job_ids: Collection[str], limits: Limits) -> list[str]:
    """The jobs ``job_ids`` ended (or left): their seats and places go; return the jobs that got a seat."""
    for job_id in job_ids:
        book.holding.pop(job_id, None)
    book.waiting = [s for s in book.waiting if s.job_id not in job_ids]
    return fill(book, limits)


def forget(book: Book, unfinished: Collection[str], listed_at: datetime) -> list[str]:
    """Jobs of the book that are not ``unfinished`` though they were there before ``listed_at``: the repair.

    A seat taken after the listing began may belong to a job the listing missed, so only older ones go.
    """
    seats = [*book.holding.values(), *book.waiting]
    return [s.job_id for s in seats if s.job_id not in unfinished and s.since < listed_at]
