"""Releasing the jobs that wait (ADR 0047): a release lost to a host dying after its upstream ended is found
by the next sweep, and many dependents are released a chunk per queue message, each exactly once.

Through the real pipeline on Azurite and the local backend; the tests deliver the steps' messages themselves.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.core.exceptions import ServiceRequestError

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline import after, groups
from hastegeo.pipeline.groups import GroupSteps, parse_group
from hastegeo.pipeline.journal import PUBLISH_GRACE_S
from hastegeo.pipeline.reconcile import ReconcileStep
from hastegeo.runtime import Runtime
from hastegeo.store import due
from hastegeo.store.queues import GROUPS_QUEUE, SUBMIT_QUEUE, GroupMessage, JobMessage
from tests.conftest import RuntimeFactory
from tests.support.processors import FAIL

from .test_groups import accept_job, group_body, make_items, run_until_ended, script_runtime

pytestmark = pytest.mark.azurite
RELEASED = "everything it waited for succeeded; submitting"


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


def sent_group_messages(runtime: Runtime, kind: str = "release") -> list[GroupMessage]:
    """Record the ``groups-make`` messages of ``kind`` the pipeline sends (they still go to the queue)."""
    sent: list[GroupMessage] = []
    send = runtime.deps.queues.send_text

    def recording(queue: str, text: str, delay_s: float = 0) -> Any:
        if queue == GROUPS_QUEUE and (message := GroupMessage.model_validate_json(text)).kind == kind:
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
    releases = sent_group_messages(runtime)
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
    monkeypatch.setattr(after, "CHUNK", 10)
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime, parameters={"script": FAIL})
    dependents = [accept_job(runtime, after=[upstream.id]).id for _ in range(after.INLINE + 3)]
    releases = sent_group_messages(runtime)
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


def entry_of(runtime: Runtime, upstream: str, known: set[str]) -> str:
    """The one job listed as waiting for ``upstream`` that is not in ``known`` (the one whose host died)."""
    (dependent,) = {name.rpartition("/")[2] for name in entries(runtime, f"after/{upstream}/")} - known
    return dependent


def sent_submits(runtime: Runtime) -> Counter[str]:
    """Count the submit messages the pipeline sends, per job (they still go to the queue)."""
    sent: Counter[str] = Counter()
    send = runtime.deps.queues.send

    def recording(queue: str, message: JobMessage, delay_s: float = 0) -> Any:
        if queue == SUBMIT_QUEUE and message.kind == "submit":
            sent[message.job_id] += 1
        return send(queue, message, delay_s)

    runtime.deps.queues.send = recording  # type: ignore[method-assign]
    return sent


@pytest.mark.parametrize("when", ["after the look", "before the look"])
@pytest.mark.parametrize("script", [None, FAIL], ids=["upstream succeeded", "upstream failed"])
def test_a_dependent_stored_as_its_upstream_ended_on_a_host_that_died_is_settled_within_one_sweep(
    make_runtime: RuntimeFactory, when: str, script: str | None
) -> None:
    """ADR 0047's first window: the upstream ends at the instant the dependent is stored, the host dies right
    after the dependent's document, from a request without a key, not from a queue: nothing replays it."""
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime, parameters={"script": script} if script else {})
    first = accept_job(runtime, after=[upstream.id])  # the upstream is flagged already: its end lists entries
    create, add_dependent = runtime.journal.create, runtime.deps.groups.add_dependent  # type: ignore[union-attr]

    def ending_before_the_entry(upstream_id: str, dependent: str) -> None:
        # The upstream ends after the acceptor read it and before its entry: its release cannot list it.
        run_until_ended(runtime, [upstream_id])
        add_dependent(upstream_id, dependent)

    def ending_before_the_document(job: Job) -> Any:
        if when == "after the look":  # its release lists the entry and finds no document
            run_until_ended(runtime, [upstream.id])
        create(job)
        raise Died("host")  # right after the document: no submit message, no release by the acceptor

    if when == "before the look":
        runtime.deps.groups.add_dependent = ending_before_the_entry  # type: ignore[union-attr, method-assign]
    runtime.journal.create = ending_before_the_document  # type: ignore[method-assign]
    with pytest.raises(Died):
        accept_job(runtime, after=[upstream.id])
    runtime.journal.create, runtime.deps.groups.add_dependent = create, add_dependent  # type: ignore[union-attr, method-assign]
    dependent = entry_of(runtime, upstream.id, {first.id})
    stored = runtime.store.get(dependent)
    assert runtime.store.get(first.id).state is not JobState.QUEUED or not runtime.store.get(first.id).waiting_for
    if when == "before the look" and script is None:
        # The acceptor's look saw the upstream succeeded: the job was stored released, an ordinary queued job.
        assert stored.waiting_for == []
        assert stored.deadline_at < stored.created_at + timedelta(days=1)
        later = dataclasses.replace(runtime.deps, clock=lambda: datetime.now(UTC) + timedelta(minutes=2))
        assert dependent in ReconcileStep(later).run().resubmitted  # its lost submit message, as any job's
    else:
        assert stored.waiting_for == [upstream.id]  # the host died before anything released or ended it
        if when == "after the look":  # the upstream's release found no document: the upstream is kept, due
            assert upstream.id in {job.id for job in runtime.store.due(datetime.now(UTC))}
        else:  # the look saw the upstream failed: the job is due at once, not at its deadline
            assert stored.release_due
            assert dependent in {job.id for job in runtime.store.due(datetime.now(UTC))}
        runtime.reconcile.run()  # the next sweep (a minute at most), not the 30-day deadline
    settled = runtime.store.get(dependent)
    if script is None:
        assert settled.waiting_for == []
        history = [e.message for e in settled.history]
        assert history.count(RELEASED) == (1 if when == "after the look" else 0), history
        assert run_until_ended(runtime, [dependent])[dependent].state is JobState.SUCCEEDED
    else:
        assert settled.state is JobState.FAILED
        assert (settled.reason or "").startswith(f"upstream job {upstream.id} failed: ")
        assert settled.handle is None  # never ran
        assert sum(1 for e in settled.history if e.message.startswith("ended without running")) == 1
    # Done, the upstream is retired: the next pass reads nothing of it.
    runtime.journal.sweep(datetime.now(UTC) + timedelta(seconds=PUBLISH_GRACE_S + 1))
    assert upstream.id not in {job.id for job in runtime.store.due(datetime.now(UTC))}


def test_a_release_chunk_that_finds_a_dependent_not_yet_stored_rearms_its_upstream(
    make_runtime: RuntimeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(after, "CHUNK", 10)
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime)
    dependents = [accept_job(runtime, after=[upstream.id]).id for _ in range(after.INLINE + 5)]
    releases = sent_group_messages(runtime)
    create = runtime.journal.create

    def releasing_before_the_document(job: Job) -> Any:
        run_until_ended(runtime, [upstream.id])  # more than INLINE dependents: one release message
        for message in releases:  # its chunks are delivered while this job's document is not written yet
            runtime.groups.handle(message)
        create(job)
        raise Died("host")

    runtime.journal.create = releasing_before_the_document  # type: ignore[method-assign]
    with pytest.raises(Died):
        accept_job(runtime, after=[upstream.id])
    runtime.journal.create = create  # type: ignore[method-assign]
    late = entry_of(runtime, upstream.id, set(dependents))
    assert runtime.store.get(late).waiting_for == [upstream.id]
    assert all(not runtime.store.get(job_id).waiting_for for job_id in dependents)
    # The upstream was retired at its end (its release went to the queue); the chunk put its due entry back.
    assert upstream.id in {job.id for job in runtime.store.due(datetime.now(UTC))}
    delivered = len(releases)
    runtime.reconcile.run()
    assert len(releases) == delivered + 1  # the sweep released the upstream's dependents again, from the first
    while delivered < len(releases):  # the list grows as each delivery sends the next chunk's message
        runtime.groups.handle(releases[delivered])
        delivered += 1
    for job_id in [*dependents, late]:
        history = [e.message for e in runtime.store.get(job_id).history]
        assert history.count(RELEASED) == 1, history


@pytest.mark.parametrize("kind", ["job", "group"])
def test_a_release_given_up_on_after_five_deliveries_still_releases_every_dependent_once(
    make_runtime: RuntimeFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    """ADR 0047's second window: the host gives up on a ``release`` message (host.json's maxDequeueCount, 5)."""
    monkeypatch.setattr(after, "CHUNK", 10)
    runtime = script_runtime(make_runtime)
    if kind == "job":
        upstream_id = accept_job(runtime).id
        items = [upstream_id]
    else:
        group, _ = runtime.groups.accept(parse_group(group_body(2)))
        make_items(runtime, group.id)
        upstream_id, items = group.id, [group.job_id(0), group.job_id(1)]
    dependents = [accept_job(runtime, after=[upstream_id]).id for _ in range(after.INLINE * 2 + 5)]
    releases, submits = sent_group_messages(runtime), sent_submits(runtime)
    run_until_ended(runtime, items)
    assert releases == [GroupMessage(group_id=upstream_id, kind="release")]
    runtime.groups.handle(releases[0])  # the first chunk released, the second chunk's message sent
    poisoned = releases[1]
    listing = runtime.deps.groups.dependents  # type: ignore[union-attr]

    def failing(*_: Any, **__: Any) -> Any:
        raise ServiceRequestError("storage went away")

    runtime.deps.groups.dependents = failing  # type: ignore[union-attr, method-assign]
    for _ in range(5):
        with pytest.raises(ServiceRequestError):
            runtime.groups.handle(poisoned)
    runtime.deps.groups.dependents = listing  # type: ignore[union-attr, method-assign]
    with caplog.at_level(logging.ERROR, logger="hastegeo.pipeline.group_poison"):
        runtime.group_poison.handle(poisoned.encode())  # what the groups-make-poison trigger hands it
    (line,) = [r.getMessage() for r in caplog.records if r.name == "hastegeo.pipeline.group_poison"]
    assert line == (
        f"groups-make: gave up on releasing the jobs waiting for {kind} {upstream_id} "
        f"(after job {poisoned.resume_after}); re-armed: the reconciler's next pass releases again the jobs "
        "still waiting"
    )
    assert sum(1 for job_id in dependents if runtime.store.get(job_id).waiting_for) == len(dependents) - 10
    delivered = len(releases)
    runtime.reconcile.run()  # the next pass repeats the release, from the first dependent
    assert releases[delivered : delivered + 1] == [GroupMessage(group_id=upstream_id, kind="release")]
    while delivered < len(releases):
        runtime.groups.handle(releases[delivered])
        delivered += 1
    for job_id in dependents:
        history = [e.message for e in runtime.store.get(job_id).history]
        assert history.count(RELEASED) == 1, history
        assert submits[job_id] == 1  # a release repeated never submits a dependent twice
    if kind == "group":
        assert upstream_id not in runtime.deps.groups.open_groups()  # type: ignore[union-attr]
    else:
        runtime.journal.sweep(datetime.now(UTC) + timedelta(seconds=PUBLISH_GRACE_S + 1))
        assert upstream_id not in {job.id for job in runtime.store.due(datetime.now(UTC))}


def test_the_groups_poison_line_says_what_each_kind_of_message_lost(
    make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = script_runtime(make_runtime)
    running = accept_job(runtime, parameters={"sleep": 5})
    messages = {
        GroupMessage(group_id="g0123456789abcdef01234567", start=100).encode(): (
            "groups-make: gave up on making the items of group g0123456789abcdef01234567 from index 100 (up to "
            "100); the reconciler sends the group's make message again once it has been quiet for 60 s"
        ),
        GroupMessage(group_id="g0123456789abcdef01234567", kind="cancel").encode(): (
            "groups-make: gave up on cancelling the items of group g0123456789abcdef01234567 from index 0 (up to "
            "100); the reconciler sends the group's cancel again if items are still queued or running 300 s after "
            "it was sent"
        ),
        GroupMessage(group_id=running.id, kind="release").encode(): (
            f"groups-make: gave up on releasing the jobs waiting for job {running.id} (from the first); nothing "
            "to re-arm: its upstream has not ended (its end releases them) or has no followers"
        ),
        "not json": "groups-make: gave up on a message that is not a group pointer: 'not json'",
    }
    with caplog.at_level(logging.ERROR, logger="hastegeo.pipeline.group_poison"):
        for text in messages:
            runtime.group_poison.handle(text)
    lines = [r.getMessage() for r in caplog.records if r.name == "hastegeo.pipeline.group_poison"]
    assert lines == list(messages.values())
    # Storage refuses the re-arm too: the line quotes the message to send again.
    ended = accept_job(runtime)
    run_until_ended(runtime, [ended.id])

    def refusing(_: str) -> bool:
        raise ServiceRequestError("storage went away")

    runtime.deps.store.rearm = refusing  # type: ignore[method-assign]
    release = GroupMessage(group_id=ended.id, kind="release").encode()
    with caplog.at_level(logging.ERROR, logger="hastegeo.pipeline.group_poison"):
        runtime.group_poison.handle(release)
    line = caplog.records[-1].getMessage()
    assert line.startswith(f"groups-make: gave up on releasing the jobs waiting for job {ended.id} (from the first); ")
    assert "not re-armed (" in line
    assert "storage went away" in line
    assert line.endswith(f"send {release} to groups-make again")


@pytest.mark.parametrize("grace_s", [after.STORING_GRACE_S, 0.0], ids=["young entry", "old entry"])
def test_an_entry_whose_job_was_never_stored_keeps_its_upstream_due_only_for_a_while(
    make_runtime: RuntimeFactory, monkeypatch: pytest.MonkeyPatch, grace_s: float
) -> None:
    """A request that died between its ``after/`` entry and its document leaves an entry nothing waits behind."""
    monkeypatch.setattr(after, "STORING_GRACE_S", grace_s)
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime)
    waiting = accept_job(runtime, after=[upstream.id])
    runtime.deps.groups.add_dependent(upstream.id, "1a00000000000000000dead0")  # type: ignore[union-attr]
    run_until_ended(runtime, [upstream.id, waiting.id])
    kept = upstream.id in {job.id for job in runtime.store.due(datetime.now(UTC))}
    assert kept is (grace_s > 0)  # young, it may still be stored: the next pass looks again; old, passed over
    assert runtime.store.get(waiting.id).state is JobState.SUCCEEDED


def test_a_job_after_an_upstream_that_already_failed_ends_at_once_without_running(
    make_runtime: RuntimeFactory,
) -> None:
    runtime = script_runtime(make_runtime)
    upstream = accept_job(runtime, parameters={"script": FAIL})
    run_until_ended(runtime, [upstream.id])
    late = accept_job(runtime, after=[upstream.id])
    assert late.state is JobState.FAILED
    assert (late.reason or "").startswith(f"upstream job {upstream.id} failed: ")
    stored = runtime.store.get(late.id)
    assert stored.handle is None
    assert not stored.release_due
    runtime.reconcile.run()  # its cost totals marker folded, which deletes its active entry (ADR 0051)
    assert [name for name in entries(runtime, "active/") if name.endswith(late.id)] == []  # retired
    assert late.id not in {due.job_of(name) for name in entries(runtime, "due/")}


def test_a_cancel_the_host_gave_up_on_is_sent_again_by_the_reconciler(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    group, _ = runtime.groups.accept(parse_group(group_body(4)))
    make_items(runtime, group.id)
    asked = datetime.now(UTC)
    runtime.groups.cancel(group.id)  # its cancel message is given up on: never handled
    runtime.group_poison.handle(GroupMessage(group_id=group.id, kind="cancel").encode())
    sent = sent_group_messages(runtime, kind="cancel")
    runtime.groups.repair([], asked + timedelta(seconds=groups.CANCEL_AGAIN_S - 5))
    assert sent == []  # not yet: the cancel may still be on its way
    later = asked + timedelta(seconds=groups.CANCEL_AGAIN_S + 5)
    runtime.groups.repair([], later)
    runtime.groups.repair([], later)  # the same pass again sends nothing twice
    assert sent == [GroupMessage(group_id=group.id, kind="cancel")]
    runtime.groups.handle(sent[0])
    final = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert final.counts()["cancelled"] == 4
    assert final.completed_at is not None
    runtime.groups.repair([], later + timedelta(seconds=groups.CANCEL_AGAIN_S * 2))
    assert len(sent) == 1  # nothing left queued or running: nothing sent again
