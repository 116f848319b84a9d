"""The job store against real Azurite: ETag-guarded updates never lose an event."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from hastegeo.models.history import make_event
from hastegeo.models.ids import new_job_id
from hastegeo.models.job import Job
from hastegeo.models.moves import record
from hastegeo.models.states import JobState
from hastegeo.utils.errors import IllegalTransitionError, JobNotFoundError
from tests.conftest import RuntimeFactory

pytestmark = pytest.mark.azurite
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def new_job(project: str = "p1", created: datetime = NOW) -> Job:
    return Job(
        id=new_job_id(),
        project_id=project,
        workload="artifacts",
        state=JobState.QUEUED,
        requested_backend="auto",
        backend="local",
        created_at=created,
        updated_at=created,
        deadline_at=created + timedelta(hours=1),
        history=[make_event(created, JobState.QUEUED, "accepted", "test")],
    )


def test_concurrent_writers_lose_no_event(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = new_job()
    assert store.create(job)
    writers, per_writer = 4, 10
    barrier = threading.Barrier(writers)

    def append(writer: int) -> None:
        barrier.wait()
        for i in range(per_writer):
            store.update(
                job.id,
                lambda j, i=i: record(j, now=NOW, limit=500, message=f"writer {writer} event {i}", source="test"),
            )

    threads = [threading.Thread(target=append, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    messages = [event.message for event in store.get(job.id).history]
    expected = {f"writer {w} event {i}" for w in range(writers) for i in range(per_writer)}
    assert expected <= set(messages)
    assert len(messages) == 1 + writers * per_writer  # nothing lost, nothing duplicated
    for w in range(writers):  # each writer's events stay in its own order
        mine = [m for m in messages if m.startswith(f"writer {w} ")]
        assert mine == [f"writer {w} event {i}" for i in range(per_writer)]


def test_create_is_exclusive(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = new_job()
    assert store.create(job) is not None
    assert store.create(job.model_copy(update={"project_id": "other"})) is None
    assert store.get(job.id).project_id == "p1"


def test_update_propagates_illegal_transitions_and_writes_nothing(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = new_job()
    store.create(job)
    with pytest.raises(IllegalTransitionError):
        store.update(job.id, lambda j: record(j, now=NOW, limit=50, message="x", source="t", state=JobState.SUCCEEDED))
    assert store.get(job.id).state is JobState.QUEUED
    assert store.update(job.id, lambda j: None).job == store.get(job.id)


def test_update_says_whether_it_wrote_and_hands_back_the_new_version(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = new_job()
    store.create(job)
    first = store.read(job.id)
    stored, etag = first  # a named pair that still unpacks
    assert (stored, etag) == (first.job, first.etag)
    assert stored == store.get(job.id)

    skipped = store.update(job.id, lambda j: None, known=first)
    assert not skipped.wrote
    assert skipped.version == first

    wrote = store.update(job.id, lambda j: j.model_copy(update={"last_error": "x"}), known=first)
    assert wrote.wrote
    assert wrote.etag != first.etag
    assert wrote.version == store.read(job.id)  # the ETag is the stored one: a follow-up write saves a read

    # A stale version costs one more read, and the change then sees the fresh document.
    seen: list[str | None] = []

    def note(current: Job) -> Job | None:
        seen.append(current.last_error)
        return None if current.last_error == "x" else current

    stale = store.update(job.id, note, known=first)
    assert seen == [None, "x"]  # the stale copy, then the fresh one after the ETag check failed
    assert not stale.wrote


def test_missing_job(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    with pytest.raises(JobNotFoundError):
        store.get("doesnotexist")
    assert store.find("doesnotexist") is None


def test_listing_is_per_project_newest_first_with_paging_and_state_filter(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    jobs = [new_job(created=NOW + timedelta(minutes=i)) for i in range(5)]
    for job in jobs:
        store.create(job)
    store.create(new_job(project="p2"))
    store.update(jobs[1].id, lambda j: record(j, now=NOW, limit=50, message="x", source="t", state=JobState.CANCELLED))
    first = store.list("p1", page_size=2)
    assert [j.id for j in first.jobs] == [jobs[4].id, jobs[3].id]
    assert first.continuation_token
    second = store.list("p1", page_size=2, continuation_token=first.continuation_token)
    assert [j.id for j in second.jobs] == [jobs[2].id, jobs[1].id]
    third = store.list("p1", page_size=2, continuation_token=second.continuation_token)
    assert [j.id for j in third.jobs] == [jobs[0].id]
    assert third.continuation_token is None
    cancelled = store.list("p1", states=frozenset({JobState.CANCELLED}), page_size=50)
    assert [j.id for j in cancelled.jobs] == [jobs[1].id]
