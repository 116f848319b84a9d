"""The due index against real Azurite (ADR 0041): a pass reads only the jobs that are due, the writes that
move a job's due time keep its entry, a crash leaves an entry too many, and the census finds a job without one."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.journal import JobJournal
from hastegeo.store import due
from hastegeo.store.jobs import JobStore
from tests.bench import storage_calls
from tests.conftest import RuntimeFactory

from .test_job_index import Crash, CrashOn, container_with, move, names, store_new
from .test_store import NOW, new_job

pytestmark = pytest.mark.azurite


def polled(store: JobStore, job_id: str, due_at: datetime) -> Job:
    """A poll's write: the chain's next message due at ``due_at``."""
    return store.update(job_id, lambda j: j.model_copy(update={"poll_due_at": due_at, "poll_seq": j.poll_seq + 1})).job


def running(store: JobStore, at: datetime) -> Job:
    """A running job created an hour before ``at``, polled at ``at`` (settled: it has an entry)."""
    job = new_job(created=at - timedelta(hours=1))
    job = job.model_copy(update={"deadline_at": at + timedelta(days=1)})
    assert store.create(job)
    job = move(store, job, JobState.RUNNING)
    return polled(store, job.id, at + timedelta(seconds=60))


def journal(store: JobStore, now: datetime) -> JobJournal:
    return JobJournal(store, clock=lambda: now, history_limit=50)


def test_a_job_gets_its_entry_once_settled_and_moves_it_only_to_a_new_bucket(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    young = move(store, store_new(store, created=NOW), JobState.RUNNING)
    young = polled(store, young.id, NOW + timedelta(seconds=5))
    assert young.due_entry is None
    assert names(store, "due/") == []
    job = running(store, NOW)
    assert job.due_entry == due.entry_name(job)
    assert names(store, "due/") == [job.due_entry]
    storage_calls.install()
    before = storage_calls.total()
    same = polled(store, job.id, NOW + timedelta(seconds=61))  # same bucket: a read and the document only
    assert storage_calls.total() - before == 2
    assert same.due_entry == job.due_entry
    moved = polled(store, job.id, NOW + timedelta(seconds=60 + due.GRID_S))
    assert moved.due_entry != job.due_entry
    assert names(store, "due/") == [moved.due_entry]
    ended = move(store, moved, JobState.CANCELLED)
    assert ended.due_entry == moved.due_entry  # kept for retire, so a job not retired is still swept
    journal(store, NOW).store.retire(ended)
    assert names(store, "due/") == []


def test_a_pass_reads_only_what_is_due(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    jobs = [running(store, NOW + timedelta(seconds=i)) for i in range(5)]
    sweeper = journal(store, NOW)
    assert sweeper.sweep() == []  # the census walks every entry, and every job has its entry: nothing read
    storage_calls.install()
    before = storage_calls.total()
    assert store.due(NOW) == []
    assert storage_calls.total() - before == 1  # one small listing, no document read
    lost = polled(store, jobs[2].id, NOW - timedelta(hours=1))  # a chain whose message never came
    later = journal(store, NOW + timedelta(seconds=1))
    assert [u.job_id for u in later.sweep()] == [lost.id]
    # At the chain's due time + grace, every live job is due too: all are read, decided on their documents.
    overdue = NOW + timedelta(seconds=60 + due.CHAIN_GRACE_S + due.GRID_S)
    assert sorted(u.job_id for u in journal(store, overdue).sweep()) == sorted(j.id for j in jobs)


def test_a_stale_entry_is_deleted_and_never_trusted(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    store = runtime.store
    job = running(store, NOW)
    hook = CrashOn(lambda method, path: method == "PUT" and path.endswith(".json"))
    crashing = JobStore(container_with(store, hook))
    with pytest.raises(BaseException, match="PUT") as crash:  # the new entry is written, the document never is
        crashing.update(job.id, lambda j: j.model_copy(update={"deadline_at": NOW - timedelta(minutes=10)}))
    assert isinstance(crash.value, Crash), crash.value
    assert len(names(store, "due/")) == 2  # an entry too many, never one too few
    stale = next(n for n in names(store, "due/") if n != job.due_entry)
    assert stale < due.due_until(NOW)  # due now: a pass reads the job, and its document names another entry
    assert journal(store, NOW).sweep() == []
    assert names(store, "due/") == [job.due_entry]


def test_the_census_finds_a_job_without_its_entry_and_gives_it_one(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    job = running(store, NOW)
    assert job.due_entry is not None
    store._container.delete_blob(job.due_entry)  # lost (a race, an operator)
    sweeper = journal(store, NOW)
    assert [u.job_id for u in sweeper.sweep()] == [job.id]  # a page of each: the cycle ends in this pass
    assert sweeper.census is not None
    assert job.id in sweeper.census.unfinished
    assert names(store, "due/") == [job.due_entry]
    assert sweeper.sweep() == []


def test_a_census_cycle_spans_passes_when_the_entries_fill_pages(make_runtime: RuntimeFactory) -> None:
    store = make_runtime().store
    young = [move(store, store_new(store, created=NOW + timedelta(seconds=i)), JobState.QUEUED) for i in range(3)]
    sweeper = journal(store, NOW + timedelta(minutes=1))
    sweeper._census.page_size = 2
    assert sweeper.sweep() == []  # a page of two of three active entries: no cycle yet
    assert sweeper.census is None
    assert sorted(u.job_id for u in sweeper.sweep()) == sorted(j.id for j in young)  # young: no entry
    assert sweeper.census is not None
