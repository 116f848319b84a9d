"""Crashes at the worst moments of groups and dependencies (ADR 0040, ADR 0047), in process, like
test_crash_points: the host dies while a group's items are being made, and between an upstream
job's end and its dependents' release (one release chunk crashing on every delivery, until the host
gives up on it and its poison step re-arms the release). The messages come back, the reconciler sweeps,
and every item is made once and run once, every dependent released (or ended without running) once."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hastegeo.models.group import Group
from hastegeo.models.states import JobState
from hastegeo.pipeline import after, groups
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.after import Dependencies
from hastegeo.pipeline.groups import parse_group
from hastegeo.runtime import Runtime
from hastegeo.store.queues import GROUPS_QUEUE, GroupMessage, JobMessage

from .checks import assert_clean, check_jobs
from .conftest import CHAOS_JOBS, Outcome
from .test_crash_points import Crash, crash_once, runtime, verify

pytestmark = [pytest.mark.azurite]
__all__ = ["runtime"]  # the fixture, shared with test_crash_points
BODY = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
RELEASED = "everything it waited for succeeded; submitting"
TIMEOUT_S = 60.0 + 5.0 * CHAOS_JOBS  # make chaos (CHAOS_JOBS=100) runs 150 items and 100 dependents
MAX_DEQUEUE = 5  # host.json's maxDequeueCount: deliveries of a message before the host gives up on it


class GroupsQueue:
    """The groups queue's messages as the pipeline sends them (they still go to the queue, shared with other
    tests), delivered here in order, each until a delivery survives, or handed to the poison step after
    :data:`MAX_DEQUEUE` deliveries that crashed, as the host does."""

    def __init__(self, runtime: Runtime) -> None:
        self.sent: list[GroupMessage] = []
        self.poisoned: list[GroupMessage] = []
        self.delivered = 0
        self._runtime = runtime
        send = runtime.deps.queues.send_text

        def recording(queue: str, text: str, delay_s: float = 0) -> Any:
            result = send(queue, text, delay_s)
            if queue == GROUPS_QUEUE:
                self.sent.append(GroupMessage.model_validate_json(text))
            return result

        runtime.deps.queues.send_text = recording  # type: ignore[method-assign]

    def pump(self) -> None:
        while self.delivered < len(self.sent):  # the list grows as deliveries send the next chunk's message
            message = self.sent[self.delivered]
            for _ in range(MAX_DEQUEUE):
                with contextlib.suppress(Crash):
                    self._runtime.groups.handle(message)
                    break
            else:  # the host gives up: the groups-make-poison trigger
                self._runtime.group_poison.handle(message.encode())
                self.poisoned.append(message)
            self.delivered += 1


def redeliver(step: Callable[[Any], object], message: Any) -> int:
    """Deliver ``message`` to ``step`` until a delivery survives, as the queue would; how many crashed."""
    for crashes in range(6):
        try:
            step(message)
            return crashes
        except Crash:
            continue
    raise AssertionError("still crashing after 6 deliveries")


def drive(runtime: Runtime, ids: list[str], queue: GroupsQueue) -> None:
    """Deliver the groups queue's messages, then every job's submit or poll, until all of ``ids`` ended."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        queue.pump()
        jobs = [runtime.store.get(job_id) for job_id in ids]
        if all(job.state.terminal for job in jobs):
            return
        assert time.monotonic() < deadline, {job.id: job.state for job in jobs if not job.state.terminal}
        for job in jobs:
            if job.state is JobState.QUEUED and not job.waiting_for:
                redeliver(runtime.submit.handle, JobMessage(job_id=job.id, kind="submit"))
            elif not job.state.terminal and job.state is not JobState.QUEUED:
                redeliver(runtime.poll.handle, JobMessage(job_id=job.id, kind="poll", poll_seq=job.poll_seq))
        time.sleep(0.05)


def test_host_killed_while_a_groups_items_are_being_made(
    runtime: Runtime, tmp_path: Path, outcome: Outcome, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunk = max(4, CHAOS_JOBS // 2)
    monkeypatch.setattr(groups, "CHUNK", chunk)
    count = 3 * chunk
    queue = GroupsQueue(runtime)
    group, _ = runtime.groups.accept(parse_group({**BODY, "items": [{"parameters": {}} for _ in range(count)]}))
    ids = [group.job_id(i) for i in range(count)]
    # In every chunk the host dies twice: right after storing its second item's job (the chunk's other
    # items half made, in parallel), and right after sending the next chunk's message, before marking it.
    stored = crash_once(runtime.store, "create", lambda job: job.id, before=False, only=set(ids[1::chunk]))
    sent = crash_once(
        runtime.deps.queues, "send_text", lambda queue, text, *_: text, before=False,
        only={GroupMessage(group_id=group.id, start=start).encode() for start in range(chunk, count, chunk)},
    )  # fmt: skip
    drive(runtime, [], queue)
    assert stored == set(ids[1::chunk])
    assert len(sent) == 2  # the second and third chunks' messages were each sent by a delivery that died
    made = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert made.counts()["queued"] == count
    assert made.made_at is not None
    assert documents_of(runtime, group) == sorted(ids)  # every item made, none twice
    drive(runtime, ids, queue)
    final = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert final.counts()["succeeded"] == count
    assert final.completed_at is not None
    assert final.completion_published
    check_jobs(outcome, [runtime.store.get(i).api_view() for i in ids], tmp_path / "local")
    assert outcome.succeeded == count, outcome.notes
    assert_clean(outcome)
    verify(runtime, outcome, tmp_path)


def documents_of(runtime: Runtime, group: Group) -> list[str]:
    """The ids of the stored job documents of ``group``'s items, read from storage's own listing."""
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    names = (str(blob.name) for blob in container.list_blobs(name_starts_with=f"jobs/{group.id}-"))
    return sorted(name.removeprefix("jobs/").removesuffix(".json") for name in names)


def test_host_killed_between_an_upstream_end_and_its_dependents_release(
    runtime: Runtime, tmp_path: Path, outcome: Outcome, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunk = max(3, CHAOS_JOBS // 4)
    monkeypatch.setattr(after, "CHUNK", chunk)
    for name in ("upstream_ended", "release", "chunk"):  # the crash points below are undone after the test
        monkeypatch.setattr(Dependencies, name, getattr(Dependencies, name))
    queue = GroupsQueue(runtime)

    def accept(**fields: Any) -> str:
        return runtime.acceptor.accept(parse_request({**BODY, **fields})).job.id

    top = accept()  # succeeds; more dependents than its end releases itself: released through the queue
    many = [accept(after=[top]) for _ in range(max(CHAOS_JOBS, after.INLINE + 1))]
    chained = accept(after=[many[0]])  # released once its own upstream (released above) succeeded
    doomed = accept()  # cancelled: its dependents, and theirs, end without running
    orphans = [accept(after=[doomed]) for _ in range(3)]
    grand = accept(after=[orphans[0]])
    upstreams = [top, many[0], doomed, orphans[0]]
    # The host dies at each upstream's end before its followers step released anything, and once in a
    # release chunk right after a release (before the chunk's next message is sent).
    ended = crash_once(
        Dependencies, "upstream_ended", lambda self, job_id, **_: job_id, before=True, only=set(upstreams)
    )
    released = crash_once(Dependencies, "release", lambda self, job_id: job_id, before=False, only={many[-1]})
    # And the second release chunk of the first upstream crashes on every delivery: the host gives up on it,
    # and its poison step re-arms the upstream for the next sweep (ADR 0047).
    second = f"{top}/{sorted(many)[chunk - 1]}"
    for _ in range(MAX_DEQUEUE):
        crash_once(
            Dependencies, "chunk", lambda self, upstream, marker: f"{upstream}/{marker}", before=True, only={second}
        )
    with pytest.raises(Crash):
        runtime.cancel.cancel(doomed)
    waiting = [*many, chained, *orphans, grand]
    everything = [top, doomed, *waiting]
    deadline = time.monotonic() + TIMEOUT_S
    while not all(runtime.store.get(job_id).state.terminal for job_id in everything):
        assert time.monotonic() < deadline
        lost = [u for u in upstreams if u in ended and runtime.store.get(u).state.terminal]
        due_now = {job.id for job in runtime.store.due(datetime.now(UTC))}
        for upstream in lost:  # an upstream whose release a crash lost: the next sweep reads it (its due entry)
            if any(runtime.store.get(d).waiting_for == [upstream] for d in waiting):
                assert upstream in due_now, upstream
        # The sweep itself may die (a cascade's next end, in its repair): the timer runs it again.
        redeliver(lambda _: runtime.reconcile.run(), None)
        drive(runtime, [j for j in everything if ready(runtime, j)], queue)
    assert ended == set(upstreams)
    assert released == {many[-1]}
    assert queue.poisoned == [GroupMessage(group_id=top, kind="release", resume_after=sorted(many)[chunk - 1])]
    finals = {job_id: runtime.store.get(job_id) for job_id in everything}
    for job_id in [*many, chained]:
        history = [e.message for e in finals[job_id].history]
        assert history.count(RELEASED) == 1, history  # released once
        assert finals[job_id].state is JobState.SUCCEEDED
    for job_id in [*orphans, grand]:
        history = [e.message for e in finals[job_id].history]
        assert finals[job_id].state is JobState.FAILED
        assert sum(1 for m in history if m.startswith("ended without running")) == 1, history  # ended once
        assert finals[job_id].handle is None  # never ran
    assert finals[doomed].state is JobState.CANCELLED
    check_jobs(outcome, [job.api_view() for job in finals.values()], tmp_path / "local")
    assert outcome.succeeded == 2 + len(many), outcome.notes
    outcome.notes.clear()  # the failed and cancelled jobs are expected here
    assert outcome.terminal == outcome.jobs
    assert outcome.duplicates == 0
    assert outcome.lost_events == 0
    assert outcome.leaks == 0
    verify(runtime, outcome, tmp_path)


def ready(runtime: Runtime, job_id: str) -> bool:
    job = runtime.store.get(job_id)
    return not job.state.terminal and not job.waiting_for
