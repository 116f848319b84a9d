"""Admission before Batch (ADR 0032): the pipeline holds jobs back, says why, and lets projects take turns.

Through the runtime's own steps, the real Batch SDK and the Batch test service; the
book lives in the test's jobs container in Azurite. The end of a job frees its seat
through the store's publisher of job events; the reconciler repairs a seat whose
release was lost. Then the fairness bench's Batch half at a small size: one job of
project B, submitted during project A's burst, starts before any of A's waiting jobs.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.admission.book import AdmissionBook
from hastegeo.pipeline.admission.fairshare import Book, Seat
from hastegeo.runtime import Runtime
from hastegeo.store.queues import JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.bench import fairness_batch

from .conftest import drive, put_input, request
from .test_capacity import Clock, running

pytestmark = pytest.mark.azurite
Limited = tuple[Runtime, Clock, BatchTestService]  # the runtime, its clock, the Batch test service under it


@pytest.fixture
def limited(azurite: Azurite, unique: str) -> Iterator[Limited]:
    clock = Clock()
    env = {
        "HASTE_BACKENDS_ENABLED": "azure_batch",
        "HASTE_PROJECT_MAX_RUNNING_PER_BACKEND": "azure_batch=1",
        "HASTE_BACKEND_MAX_RUNNING": "azure_batch=2",
    }
    with running(azurite, unique, clock, **env) as (runtime, service):
        for project in ("p1", "p2", "p3"):
            put_input(runtime, f"{project}/a.txt", b"alpha")
        yield runtime, clock, service


def submit(runtime: Runtime, project: str) -> str:
    fields = {"backend": "azure_batch", "projectId": project, "inputs": [{"blob": f"{project}/a.txt"}]}
    job = runtime.acceptor.accept(parse_request(request(**fields))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    return job.id


def waiting_lines(runtime: Runtime, job_id: str) -> list[str]:
    return [event.message for event in runtime.store.get(job_id).history if event.message.startswith("waiting:")]


def book(runtime: Runtime) -> AdmissionBook:
    return AdmissionBook(runtime.blobs.get_container_client(runtime.settings.storage.jobs_container))


def test_jobs_wait_for_their_project_and_the_backend_then_take_turns(
    limited: Limited,
) -> None:
    runtime, clock, _ = limited
    first = submit(runtime, "p1")
    held = submit(runtime, "p1")
    other = submit(runtime, "p2")
    third = submit(runtime, "p3")
    assert runtime.store.get(first).state is JobState.RUNNING
    assert runtime.store.get(other).state is JobState.RUNNING
    assert runtime.store.get(held).state is JobState.QUEUED
    assert waiting_lines(runtime, held) == ["waiting: project p1 has 1 of 1 running jobs on azure_batch"]
    assert waiting_lines(runtime, third) == ["waiting: all 2 seats of azure_batch are taken; projects take turns"]
    runtime.submit.handle(JobMessage(job_id=held, kind="submit"))  # redelivered: the same place, no new line
    assert len(waiting_lines(runtime, held)) == 1

    clock.now += timedelta(seconds=1)
    assert drive(runtime, first).state is JobState.SUCCEEDED  # its end frees its seat: p1's next job, the oldest
    assert set(book(runtime).read().holding) == {other, held}
    # The poll step that saw the end submitted it at once (no submit message to wait for).
    assert runtime.store.get(held).state is JobState.RUNNING
    assert runtime.store.get(third).state is JobState.QUEUED
    runtime.submit.handle(JobMessage(job_id=held, kind="submit"))  # a stray submit message changes nothing
    assert runtime.store.get(held).state is JobState.RUNNING


def test_a_seat_handed_over_to_a_job_batch_refuses_goes_by_message(
    limited: Limited, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime, _, service = limited
    first = submit(runtime, "p1")
    held = submit(runtime, "p1")
    sent: list[JobMessage] = []
    send = runtime.queues.send

    def recorded(queue: str, message: JobMessage, *args: Any) -> Any:
        sent.append(message)
        return send(queue, message, *args)

    monkeypatch.setattr(runtime.queues, "send", recorded)
    service.faults.fail("create_job", 503, "ServerBusy", times=50)  # the hand-over's submission cannot get through
    assert drive(runtime, first).state is JobState.SUCCEEDED
    waiting = runtime.store.get(held)
    assert waiting.state is JobState.QUEUED
    assert any(e.message.startswith("submit attempt 1 on azure_batch failed, will retry") for e in waiting.history)
    assert JobMessage(job_id=held, kind="submit") in sent  # the queue retries it
    service.faults.clear()
    runtime.submit.handle(JobMessage(job_id=held, kind="submit"))  # that message, delivered
    assert runtime.store.get(held).state is JobState.RUNNING


def test_the_reconciler_frees_a_seat_whose_release_was_lost(limited: Limited) -> None:
    runtime, clock, _ = limited
    first = submit(runtime, "p1")
    second = submit(runtime, "p2")
    waiting = submit(runtime, "p3")
    assert drive(runtime, first).state is JobState.SUCCEEDED

    def unreleased(b: Book) -> None:  # the book as if the end of the first job had never freed its seat
        b.waiting.insert(0, b.holding.pop(waiting))
        b.holding[first] = Seat(first, "p1", "azure_batch", clock.now)

    book(runtime).change(unreleased)
    runtime.reconcile.run()  # the seat is as young as the listing: it may belong to a job the listing missed
    assert set(book(runtime).read().holding) == {first, second}
    clock.now += timedelta(seconds=1)
    runtime.reconcile.run()  # older than the listing, and its job has ended: freed, and the next job gets it
    assert set(book(runtime).read().holding) == {second, waiting}
    assert waiting_lines(runtime, waiting) == ["waiting: all 2 seats of azure_batch are taken; projects take turns"]


def test_a_job_of_another_project_starts_before_the_rest_of_a_burst_on_batch() -> None:
    with Azurite(in_memory=True) as azurite:  # the submit queue of its own
        fifo = fairness_batch.run("today's order", 12, 2, azurite.connection_string)
    with Azurite(in_memory=True) as azurite:
        turns = fairness_batch.run(fairness_batch.TURNS, 12, 2, azurite.connection_string)
    waited, waiting_then, before = turns
    assert waiting_then > 0
    assert before == 0, f"{before} of A's {waiting_then} waiting jobs started before B's"
    assert fifo[2] == fifo[1] > 0  # first come, first served: B waited behind every one of them
    assert waited < 30  # bounded, not a timing goal: the bench reports the time
