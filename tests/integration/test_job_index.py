"""The job index against real Azurite: every state filter answers from its own entries,
pages are full, and a crash between an entry and its document never hides a job."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.core.pipeline import PipelineRequest
from azure.storage.blob import ContainerClient

from hastegeo.models.job import Job
from hastegeo.models.moves import record
from hastegeo.models.states import JobState
from hastegeo.pipeline.journal import JobJournal, Unfinished
from hastegeo.store import index
from hastegeo.store.jobs import JobStore
from hastegeo.utils.errors import ConflictError
from tests.conftest import RuntimeFactory

from .test_store import NOW, new_job

pytestmark = pytest.mark.azurite

# The legal paths from queued to each state.
PATHS: dict[JobState, list[JobState]] = {
    JobState.QUEUED: [],
    JobState.SUBMITTING: [JobState.SUBMITTING],
    JobState.RUNNING: [JobState.SUBMITTING, JobState.RUNNING],
    JobState.POSTPROCESSING: [JobState.SUBMITTING, JobState.RUNNING, JobState.POSTPROCESSING],
    JobState.CANCEL_REQUESTED: [JobState.SUBMITTING, JobState.CANCEL_REQUESTED],
    JobState.SUCCEEDED: [JobState.SUBMITTING, JobState.RUNNING, JobState.POSTPROCESSING, JobState.SUCCEEDED],
    JobState.FAILED: [JobState.SUBMITTING, JobState.FAILED],
    JobState.CANCELLED: [JobState.CANCELLED],
}


class Crash(BaseException):
    """The process dying between two storage calls: nothing on the way up handles it."""


class CrashOn:
    """A storage request hook: fail the first request for which ``when(method, path)`` holds, before it is sent."""

    def __init__(self, when: Callable[[str, str], bool]) -> None:
        self.when = when
        self.fired = False

    def __call__(self, request: PipelineRequest[Any]) -> None:
        http = request.http_request
        path = http.url.split("?", 1)[0]
        if not self.fired and self.when(http.method, path):
            self.fired = True
            raise Crash(f"{http.method} {path}")


def journal_of(store: JobStore) -> JobJournal:
    """The pipeline's write path over ``store``, without events or seats: what retires ended jobs' entries."""
    return JobJournal(store, clock=lambda: NOW, history_limit=50)


def unfinished(store: JobStore, now: datetime | None = None) -> list[Unfinished]:
    """The reconciler's sweep over ``store``."""
    return journal_of(store).sweep(now)


def move(store: JobStore, job: Job, state: JobState) -> Job:
    for step in PATHS[state]:
        job = (
            journal_of(store)
            .update(job.id, lambda j, s=step: record(j, now=NOW, limit=50, message=s.value, source="t", state=s))
            .job
        )
    return job


def container_with(store: JobStore, hook: CrashOn) -> ContainerClient:
    plain = store._container
    return ContainerClient.from_container_url(plain.url, credential=plain.credential, raw_request_hook=hook)


def names(store: JobStore, prefix: str) -> list[str]:
    return [str(b.name) for b in store._container.list_blobs(name_starts_with=prefix)]


def test_every_state_filter_answers_from_its_own_entries(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    made: dict[JobState, list[str]] = {}
    for offset, state in enumerate(sorted(JobState) * 2):
        job = move(store, store_new(store, created=NOW + timedelta(minutes=offset)), state)
        made.setdefault(state, []).insert(0, job.id)  # newest first
    for state in JobState:
        page = store.list("p1", states=frozenset({state}))
        assert [j.id for j in page.jobs] == made[state], state
        assert page.continuation_token is None
    both = store.list("p1", states=frozenset({JobState.RUNNING, JobState.SUCCEEDED}), page_size=3)
    rest = store.list(
        "p1", states=frozenset({JobState.SUCCEEDED, JobState.RUNNING}), continuation_token=both.continuation_token
    )
    listed = [j.id for j in both.jobs + rest.jobs]
    assert sorted(listed) == sorted(made[JobState.RUNNING] + made[JobState.SUCCEEDED])
    assert len(both.jobs) == 3
    assert rest.continuation_token is None
    # Ended jobs leave the active entries; each has exactly one state entry.
    active = {index.parse(n, n[: n.rindex("/") + 1]).job_id for n in names(store, "active/p1/")}
    assert active == {i for s, ids in made.items() if not s.terminal for i in ids}
    for state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
        assert len(names(store, f"ended/p1/{state.value}/")) == 2


def store_new(store: JobStore, **fields: Any) -> Job:
    job = new_job(**fields)
    assert store.create(job)
    return job


def test_a_state_filter_fills_its_page_past_many_other_jobs(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    running = [move(store, store_new(store, created=NOW + timedelta(seconds=i)), JobState.RUNNING) for i in range(3)]
    for i in range(120):  # newer, and all ended
        move(store, store_new(store, created=NOW + timedelta(hours=1, seconds=i)), JobState.CANCELLED)
    page = store.list("p1", states=frozenset({JobState.RUNNING}), page_size=3)
    assert [j.id for j in page.jobs] == [j.id for j in reversed(running)]
    assert page.continuation_token is None
    assert {u.job_id for u in unfinished(store)} == {j.id for j in running}


def test_a_crash_after_the_entries_before_the_document_hides_nothing(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = new_job()
    crash = CrashOn(lambda method, path: method == "PUT" and path.endswith(f"/jobs/{job.id}.json"))
    crashing = JobStore(container_with(store, crash))
    with pytest.raises(Crash):
        crashing.create(job)
    assert names(store, "active/p1/")
    assert store.list("p1").jobs == []
    assert unfinished(store) == []
    assert names(store, "active/p1/")  # young: may be a create in flight, so kept
    assert unfinished(store, datetime.now(UTC) + timedelta(hours=1)) == []
    assert names(store, "active/p1/") == []  # old: the create crashed; removed
    assert store.create(job)  # the retried create stands
    assert [u.job_id for u in unfinished(store)] == [job.id]


def test_a_crash_between_an_ended_document_and_its_entries_is_repaired(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = move(store, store_new(store), JobState.RUNNING)
    # The document says failed; the process dies before the active entry is deleted.
    crash = CrashOn(lambda method, path: method == "DELETE" and "/active/p1/" in path)
    crashing = JobStore(container_with(store, crash))
    with pytest.raises(Crash):
        journal_of(crashing).update(
            job.id, lambda j: record(j, now=NOW, limit=50, message="x", source="t", state=JobState.FAILED)
        )
    assert store.get(job.id).state is JobState.FAILED
    assert names(store, "active/p1/")
    assert store.list("p1", states=frozenset({JobState.RUNNING})).jobs == []  # the document is the truth
    assert [j.id for j in store.list("p1", states=frozenset({JobState.FAILED})).jobs] == [job.id]
    assert unfinished(store) == []  # the reconciler's sweep repairs the index
    assert names(store, "active/p1/") == []
    assert len(names(store, "ended/p1/failed/")) == 1


def test_a_crash_between_an_ended_entry_and_its_document_is_repaired(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = move(store, store_new(store), JobState.RUNNING)
    crash = CrashOn(lambda method, path: method == "PUT" and path.endswith(f"/jobs/{job.id}.json"))
    crashing = JobStore(container_with(store, crash))
    with pytest.raises(Crash):  # the ended/cancelled entry is written, the document never is
        crashing.update(
            job.id, lambda j: record(j, now=NOW, limit=50, message="x", source="t", state=JobState.CANCELLED)
        )
    assert names(store, "ended/p1/cancelled/")
    assert store.list("p1", states=frozenset({JobState.CANCELLED})).jobs == []
    assert [u.job_id for u in unfinished(store)] == [job.id]  # still running, still swept
    # The job then ends another way: the stray entry is dropped by the next listing that meets it.
    move_to = JobState.POSTPROCESSING, JobState.SUCCEEDED
    for state in move_to:
        journal_of(store).update(
            job.id, lambda j, s=state: record(j, now=NOW, limit=50, message="x", source="t", state=s)
        )
    assert store.list("p1", states=frozenset({JobState.CANCELLED})).jobs == []
    assert names(store, "ended/p1/cancelled/") == []
    assert [j.id for j in store.list("p1", states=frozenset({JobState.SUCCEEDED})).jobs] == [job.id]


def test_a_repeated_create_at_another_time_leaves_one_listed_job(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = store_new(store)
    again = job.model_copy(update={"created_at": NOW + timedelta(minutes=5)})
    assert not store.create(again)  # the id is taken; its entries point to the wrong time
    assert [j.id for j in store.list("p1").jobs] == [job.id]
    assert [j.id for j in store.list("p1", states=frozenset({JobState.QUEUED})).jobs] == [job.id]
    assert len(unfinished(store)) == 1
    assert len(names(store, "active/p1/")) == 1


def test_jobs_stored_before_the_index_are_indexed_once(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    store = runtime.store
    running = move(store, store_new(store, created=datetime.now(UTC)), JobState.RUNNING)  # within its deadline
    ended = move(store, store_new(store), JobState.FAILED)
    for name in names(store, "active/") + names(store, "ended/"):  # as an older version left them
        store._container.delete_blob(name)
    assert unfinished(store) == []
    runtime.reconcile.run()  # the first sweep of a process indexes what an older version stored
    assert store.backfill_index() is None  # once per container
    assert [u.job_id for u in unfinished(store)] == [running.id]
    assert [j.id for j in store.list("p1", states=frozenset({JobState.FAILED})).jobs] == [ended.id]


def test_a_document_that_does_not_parse_neither_stops_the_sweep_nor_loses_its_entries(
    make_runtime: RuntimeFactory,
) -> None:
    store = make_runtime().store
    broken, fine = store_new(store), store_new(store, created=NOW + timedelta(minutes=1))
    store._container.upload_blob(JobStore.document_name(broken.id), b'{"id": "not a job"}', overwrite=True)
    assert [u.job_id for u in unfinished(store, datetime.now(UTC) + timedelta(hours=1))] == [fine.id]
    assert len(names(store, "active/p1/")) == 2  # the broken job's entry is kept for an operator to see


def test_a_change_that_does_not_end_the_job_writes_its_document_alone(make_runtime: RuntimeFactory) -> None:
    """A job's entries change only when it ends: a move between unfinished states, or an event
    without a move, is one write (no entry is put again, so none can come back after a reader
    removed it)."""
    store = make_runtime().store
    job = store_new(store)
    writes: list[str] = []

    def record_writes(request: PipelineRequest[Any]) -> None:
        if request.http_request.method in ("PUT", "DELETE"):
            writes.append(request.http_request.url.split("?", 1)[0])

    counted = JobStore(
        ContainerClient.from_container_url(
            store._container.url, credential=store._container.credential, raw_request_hook=record_writes
        )
    )
    counted.update(job.id, lambda j: record(j, now=NOW, limit=50, message="s", source="t", state=JobState.SUBMITTING))
    counted.update(job.id, lambda j: record(j, now=NOW, limit=50, message="a note", source="t"))
    assert len(writes) == 2
    assert all(url.endswith(f"/jobs/{job.id}.json") for url in writes)


def test_a_change_refused_after_a_lost_race_leaves_no_ended_entry_of_its_own(make_runtime: RuntimeFactory) -> None:
    """A cancel writes its ``ended/cancelled`` entry, loses the ETag race to a failure, and is then refused (the
    job ended): the entry it wrote goes, so the index names only the state the document has."""
    store = make_runtime().store
    job = move(store, store_new(store), JobState.RUNNING)
    stale = store.read(job.id)
    journal_of(store).update(
        job.id, lambda j: record(j, now=NOW, limit=50, message="x", source="t", state=JobState.FAILED)
    )

    def cancel(current: Job) -> Job:
        if current.state.terminal:
            raise ConflictError(f"Job {current.id} already ended")
        return record(current, now=NOW, limit=50, message="cancelled", source="t", state=JobState.CANCELLED)

    with pytest.raises(ConflictError):
        store.update(job.id, cancel, known=stale)  # first try on the stale copy: writes the entry, loses the race
    assert names(store, "ended/p1/cancelled/") == []
    assert len(names(store, "ended/p1/failed/")) == 1
