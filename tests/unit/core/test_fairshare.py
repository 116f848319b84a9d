"""Admission before a provider (ADR 0032): seats, limits, projects in turn, and the book's repair. Pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.pipeline.admission.fairshare import Book, Limits, Seat, forget, free, take, why_waiting
from hastegeo.utils.turns import admission_order

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = Limits(seats={"azure_batch": 2})


def seat(job_id: str, project: str, backend: str = "azure_batch", at: int = 0) -> Seat:
    return Seat(job_id, project, backend, T0 + timedelta(seconds=at))


def test_the_order_takes_projects_in_turn_and_oldest_first_within_one() -> None:
    waiting = [("a1", "A"), ("a2", "A"), ("b1", "B"), ("a3", "A"), ("c1", "C"), ("b2", "B")]
    assert admission_order(waiting, {"A": 2}, free=4) == ["b1", "c1", "b2", "a1"]
    assert admission_order(waiting, {"A": 1}, free=6, limit=1) == ["b1", "c1"]


def test_a_full_backend_holds_jobs_back_and_says_why() -> None:
    book = Book()
    assert take(book, seat("a1", "A"), BATCH) == (None, [])  # not in the list: it was the one asking
    assert take(book, seat("a2", "A"), BATCH)[0] is None
    reason, admitted = take(book, seat("a3", "A", at=1), BATCH)
    assert reason == "all 2 seats of azure_batch are taken; projects take turns"
    assert admitted == []
    assert [s.job_id for s in book.waiting] == ["a3"]


def test_a_job_of_another_project_gets_the_next_free_seat_before_the_burst() -> None:
    book = Book()
    for i in range(10):
        take(book, seat(f"a{i}", "A", at=i), BATCH)
    take(book, seat("b", "B", at=20), BATCH)  # submitted mid-burst
    assert free(book, ["a0"], BATCH) == ["b"]
    assert free(book, ["a1"], BATCH) == ["a2"]


def test_asking_twice_or_freeing_twice_changes_nothing() -> None:
    book = Book()
    for i in range(3):
        take(book, seat(f"a{i}", "A", at=i), BATCH)
    before = (dict(book.holding), list(book.waiting))
    assert take(book, seat("a0", "A", at=9), BATCH) == (None, [])
    assert take(book, seat("a2", "A", at=9), BATCH)[0] is not None
    assert (dict(book.holding), list(book.waiting)) == before
    assert free(book, ["a0"], BATCH) == ["a2"]
    assert free(book, ["a0"], BATCH) == []
    assert set(book.holding) == {"a1", "a2"}


def test_project_limits_per_backend_and_across_backends() -> None:
    limits = Limits(total=2, per_backend={"azure_batch": 1})
    book = Book()
    assert take(book, seat("a1", "A"), limits)[0] is None
    assert take(book, seat("a2", "A"), limits)[0] == "project A has 1 of 1 running jobs on azure_batch"
    assert take(book, seat("a3", "A", backend="azure_ml"), limits)[0] is None
    assert take(book, seat("a4", "A", backend="azure_ml"), limits)[0] == "project A has 2 of 2 running jobs"
    assert take(book, seat("b1", "B"), limits)[0] is None  # another project is not held by A's limits
    assert free(book, ["a3"], limits) == ["a4"]  # the azure_ml seat goes to A's azure_ml job, not past the limit


def test_a_job_that_moved_to_another_backend_gives_up_its_seat() -> None:
    book = Book()
    take(book, seat("a1", "A"), BATCH)
    take(book, seat("a2", "A"), BATCH)
    take(book, seat("a3", "A"), BATCH)
    reason, admitted = take(book, seat("a1", "A", backend="local"), BATCH)
    assert reason is None
    assert admitted == ["a3"]  # the Batch seat a1 left went to the next in line
    assert book.holding["a1"].backend == "local"


def test_the_repair_frees_seats_of_jobs_that_ended_unseen_but_not_newer_ones() -> None:
    book = Book()
    for i in range(3):
        take(book, seat(f"a{i}", "A", at=i), BATCH)
    listed_at = T0 + timedelta(seconds=1.5)  # a2 took its place after the listing began
    gone = forget(book, unfinished={"a1"}, listed_at=listed_at)
    assert gone == ["a0"]
    assert free(book, gone, BATCH) == ["a2"]


def test_a_backend_without_limits_is_not_booked() -> None:
    assert not BATCH.apply_to("local")
    assert Limits(total=3).apply_to("local")
    assert why_waiting(Book(), seat("a1", "A", backend="local"), BATCH) is None
