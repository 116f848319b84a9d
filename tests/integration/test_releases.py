"""Releasing the jobs that wait (ADR 0047): a release lost to a host dying after its upstream ended is found
by the next sweep, and many dependents are released a chunk per queue message, each exactly once.

Through the real pipeline on Azurite and the local backend; the tests deliver the steps' messages themselves.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.core.exceptions import ServiceRequestError

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline import after
from hastegeo.pipeline.groups import GroupSteps
from hastegeo.pipeline.journal import PUBLISH_GRACE_S
from hastegeo.pipeline.reconcile import ReconcileStep
from hastegeo.runtime import Runtime
from hastegeo.store import due
from hastegeo.store.queues import GROUPS_QUEUE, GroupMessage
from tests.conftest import RuntimeFactory

from .test_groups import accept_job, run_until_ended, script_runtime

pytestmark = pytest.mark.azurite


class Died(BaseException):
    """The host dying: nothing on the way up handles it."""


class DyingFollowers:
    """The journal's followers step, dying (or failing) once at the end of job ``upstream``."""

    def __init__(self, groups: GroupSteps, upstream: str, failure: BaseException) -> None:
        self._groups, self._upstream, self._failure = groups, upstream, failure
        self.died = False

    def after_write(self, previous: JobState, job: Job) -> None:
        if job.id == self._upstream and job.state.terminal and not self.died:
            self.died = True
            raise self._failure
        self._groups.after_write(previous, job)

    def repair(self, jobs: Sequence[Job], now: datetime) -> set[str]:
        return self._groups.repair(jobs, now)


def entries(runtime: Runtime, prefix: str) -> list[str]:
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    return [str(blob.name) for blob in container.list_blobs(name_starts_with=prefix)]


def sent_releases(runtime: Runtime) -> list[GroupMessage]:
    """Record the ``release`` messages the pipeline sends (they still go to the queue)."""
    sent: list[GroupMessage] = []
    send = runtime.deps.queues.send_text

    def recording(queue: str, text: str, delay_s: float = 0) -> Any:
        if queue == GROUPS_QUEUE and (message := GroupMessage.model_validate_json(text)).kind == "release":
            sent.append(message)
        return send(queue, text, delay_s)

    runtime.deps.queues.send_text = recording  # type: ignore[method-assign]
    return sent


@pytest.mark.parametrize("failure", [Died("host"), ServiceRequestError("storage went away")], ids=["died", "failed"])
def test_a_release_lost_after_the_upstream_ended_is_found_by_the_next_sweep(
    make_runtime: RuntimeFactory, failure: BaseException
) -> None:
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime)
    waiting = accept_job(runtime, after=[upstream.id])
    # Waiting, the job has its due entry from its first write, at its deadline: no pass reads it before.
    assert waiting.due_entry == f"{due.DUE}{due.bucket(waiting.deadline_at)}/{waiting.id}"
    assert entries(runtime, waiting.due_entry) == [waiting.due_entry]
    assert runtime.store.due(datetime.now(UTC)) == []
    groups = runtime.groups
    runtime.journal.followers = dying = DyingFollowers(groups, upstream.id, failure)
    try:
        run_until_ended(runtime, [upstream.id])
    except Died:
        run_until_ended(runtime, [upstream.id])  # the poll message comes back: the job has ended
    assert dying.died
    ended = runtime.store.get(upstream.id)
    assert ended.state is JobState.SUCCEEDED
    assert runtime.store.get(waiting.id).waiting_for == [upstream.id]  # the release was lost
    # The ending write moved the upstream's due entry to its end, and it was not retired: the next pass reads it.
    assert ended.due_entry is not None
    assert due.bucket_of(ended.due_entry) <= due.bucket(datetime.now(UTC))
    assert upstream.id in {job.id for job in runtime.store.due(datetime.now(UTC))}
    runtime.journal.followers = groups
    runtime.journal.sweep()
    released = runtime.store.get(waiting.id)
    assert released.waiting_for == []
    assert [e.message for e in released.history].count("everything it waited for succeeded; submitting") == 1
    # Done, the upstream is retired once its events are out (a crashed writer's, a minute on: the journal's
    # catch-up): its due entry goes with its active entry, and the next sweep finds nothing.
    runtime.journal.sweep(datetime.now(UTC) + timedelta(seconds=PUBLISH_GRACE_S + 1))
    assert entries(runtime, ended.due_entry) == []
    assert not [name for name in entries(runtime, "active/") if name.endswith(upstream.id)]
    assert upstream.id not in {job.id for job in runtime.store.due(datetime.now(UTC))}
    assert run_until_ended(runtime, [waiting.id])[waiting.id].state is JobState.SUCCEEDED


def test_many_dependents_are_released_a_chunk_per_message_each_once(
    make_runtime: RuntimeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(after, "CHUNK", 10)
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime, parameters={"sleep": 0.3})
    dependents = [accept_job(runtime, after=[upstream.id]).id for _ in range(after.INLINE * 2 + 5)]
    releases = sent_releases(runtime)
    run_until_ended(runtime, [upstream.id])
    # More than INLINE dependents: the upstream's end released none itself, it sent one message.
    assert releases == [GroupMessage(group_id=upstream.id, kind="release")]
    assert all(runtime.store.get(job_id).waiting_for == [upstream.id] for job_id in dependents)
    delivered = 0
    while delivered < len(releases):
        before = {job_id for job_id in dependents if not runtime.store.get(job_id).waiting_for}
        runtime.groups.handle(releases[delivered])
        now = {job_id for job_id in dependents if not runtime.store.get(job_id).waiting_for}
        assert 0 < len(now - before) <= after.CHUNK  # a bounded chunk per delivery
        delivered += 1
    assert delivered == 3
    assert [m.resume_after for m in releases] == [None, sorted(dependents)[9], sorted(dependents)[19]]
    # A delivery that comes back (a host died after it) releases nothing twice.
    runtime.groups.handle(releases[1])
    for job_id in dependents:
        job = runtime.store.get(job_id)
        assert job.waiting_for == []
        assert [e.message for e in job.history].count("everything it waited for succeeded; submitting") == 1


def test_an_upstream_failure_reaches_many_dependents_through_the_chunks(
    make_runtime: RuntimeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.processors import FAIL

    monkeypatch.setattr(after, "CHUNK", 10)
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime, parameters={"script": FAIL})
    dependents = [accept_job(runtime, after=[upstream.id]).id for _ in range(after.INLINE + 3)]
    releases = sent_releases(runtime)
    run_until_ended(runtime, [upstream.id])
    for message in releases:  # the list grows as each delivery sends the next chunk's message
        runtime.groups.handle(message)
    assert len(releases) == 2
    for job_id in dependents:
        job = runtime.store.get(job_id)
        assert job.state is JobState.FAILED
        assert job.reason is not None
        assert job.reason.startswith(f"upstream job {upstream.id} failed: ")
        assert "band 4 is missing" in job.reason
        assert job.handle is None  # never ran


def test_the_sweep_sends_no_submit_message_for_a_waiting_job(make_runtime: RuntimeFactory) -> None:
    """A waiting job stored before its due entry (found by the census) gets no submit message, however quiet."""
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime, parameters={"sleep": 5})
    waiting = accept_job(runtime, after=[upstream.id])
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    document = json.loads(container.download_blob(f"jobs/{waiting.id}.json").readall())
    container.delete_blob(document.pop("dueEntry"))
    container.upload_blob(f"jobs/{waiting.id}.json", json.dumps(document).encode(), overwrite=True)
    later = dataclasses.replace(runtime.deps, clock=lambda: datetime.now(UTC) + timedelta(minutes=2))
    report = ReconcileStep(later).run()
    assert upstream.id in report.resubmitted  # quiet for two minutes: its submit message may have been lost
    assert waiting.id not in report.resubmitted
    # The census gave it its entry, at its deadline.
    assert runtime.store.get(waiting.id).due_entry == f"{due.DUE}{due.bucket(waiting.deadline_at)}/{waiting.id}"
