"""The group commit of a group's marks (ADR 0049): concurrent callers join one write, none is lost.

The document here is an in-memory one with the store's contract (read, apply the pure change, write
only if nothing wrote since, else read and apply again); the same commit over the real store on
Azurite is in tests/integration/test_group_marks.py.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from hastegeo.models.group import Group, completes
from hastegeo.models.states import JobState
from hastegeo.pipeline.group_commit import Change, GroupCommit, Outcome, apply_all
from hastegeo.utils import backoff
from hastegeo.utils.backoff import conflict_delay
from hastegeo.utils.errors import ConflictError
from tests.support.waiting import wait_for

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def queued_group(items: int) -> Group:
    return Group(
        id="g1",
        project_id="p1",
        workload="artifacts",
        item_count=items,
        marks="q" * items,
        created_at=NOW,
        updated_at=NOW,
    )


def mark(index: int, state: JobState = JobState.SUCCEEDED) -> Callable[[Group], Group | None]:
    def change(group: Group) -> Group | None:
        return group.marked(index, 0, state, f"g1-{index}", None, NOW)

    return change


class Document:
    """One stored group with the store's ETag contract. ``hold`` (when set) keeps a write from finishing until it
    is set from the test; the write attempts numbered in ``failing`` raise instead of storing."""

    def __init__(self, group: Group) -> None:
        self.group = group
        self.version = 0
        self.writes = 0
        self.applied = 0  # how many times a combined change ran (several on a conflict)
        self.lock = threading.Lock()
        self.hold: threading.Event | None = None
        self.entered = threading.Event()  # a write is under way (its change applied)
        self.attempts = 0
        self.failing: dict[int, Exception] = {}
        self.latency = 0.0  # how long a write takes, as a storage call does

    def update(self, key: str, change: Callable[[Group], Group | None]) -> tuple[Group, bool]:
        assert key == "g1"
        while True:
            with self.lock:
                current, version = self.group, self.version
            updated = change(current)
            self.applied += 1
            if updated is None:
                return current, False
            self.entered.set()
            if self.hold is not None:
                assert self.hold.wait(10)
            time.sleep(self.latency)
            with self.lock:
                self.attempts += 1
                if self.attempts in self.failing:
                    raise self.failing[self.attempts]
                if version != self.version:
                    continue
                self.group, self.version, self.writes = updated, version + 1, self.writes + 1
                return updated, True

    def other_writer(self, change: Callable[[Group], Group | None]) -> None:
        """A write from another process, straight to the document; the write under way loses its ETag check."""
        with self.lock:
            updated = change(self.group)
            self.group, self.version = updated or self.group, self.version + 1


def held_write(
    document: Document, commit: GroupCommit[Group], pool: ThreadPoolExecutor, change: Change[Group]
) -> Future[Outcome[Group]]:
    """A caller's write, under way and held (``document.hold``) until the test sets it."""
    document.hold = threading.Event()
    future = pool.submit(commit.apply, "g1", change)
    assert document.entered.wait(10)
    return future


def test_apply_all_applies_each_change_to_what_the_ones_before_it_left() -> None:
    def boom(group: Group) -> Group | None:
        raise ValueError("bad change")

    group = queued_group(3)
    document, steps = apply_all(group, [mark(0), mark(0), boom, mark(2, JobState.FAILED)])
    assert document is not None
    assert document.marks == "sqf"
    assert steps[0].prior is group
    assert steps[0].result is not None
    assert steps[1].result is None  # the same mark again changes nothing
    assert isinstance(steps[2].error, ValueError)
    assert steps[3].prior.marks == "sqq"
    nothing, [step] = apply_all(group, [mark(5)])  # no such item: nothing to write
    assert nothing is None
    assert step.result is None


def test_a_lone_mark_is_written_at_once_in_one_write() -> None:
    document = Document(queued_group(2))
    commit: GroupCommit[Group] = GroupCommit(document.update)
    outcome = commit.apply("g1", mark(1))
    assert outcome.changed
    assert document.writes == 1
    assert document.group.marks == "qs"
    assert outcome.stored.marks == "qs"
    assert commit.waiting("g1") == 0
    again = commit.apply("g1", mark(1))  # repeating a mark changes nothing and writes nothing
    assert not again.changed
    assert document.writes == 1


def test_callers_racing_while_a_write_is_under_way_join_the_next_write_and_each_returns_once_it_is_stored() -> None:
    items = 40
    document = Document(queued_group(items))
    commit: GroupCommit[Group] = GroupCommit(document.update)
    document.hold = threading.Event()

    def call(index: int) -> tuple[Outcome[Group], str]:
        outcome = commit.apply("g1", mark(index))
        return outcome, document.group.marks  # what is stored when the caller is answered

    with ThreadPoolExecutor(max_workers=items) as pool:
        first = pool.submit(call, 0)
        assert document.entered.wait(10)  # the first write is under way, held
        rest = [pool.submit(call, index) for index in range(1, items)]
        wait_for(lambda: commit.waiting("g1") == items - 1)
        document.hold.set()
        answers = [first.result(10), *(future.result(10) for future in rest)]
    assert document.writes == 2  # the lone first mark, then every other one in one write
    assert document.group.marks == "s" * items
    for index, (outcome, stored_then) in enumerate(answers):
        assert outcome.changed
        assert stored_then[index] == "s"  # the caller returned after the write holding its mark was stored
    assert sum(completes(outcome.prior, outcome.result) for outcome, _ in answers) == 1
    assert answers[-1][0].stored.completed_at is not None


def test_a_failed_write_fails_every_caller_of_its_batch_and_the_next_batch_still_writes() -> None:
    document = Document(queued_group(12))
    commit: GroupCommit[Group] = GroupCommit(document.update)
    document.failing[2] = ConflictError("Group g1 changed too often to update; try again")  # the batch's write
    with ThreadPoolExecutor(max_workers=12) as pool:
        first = held_write(document, commit, pool, mark(0))
        batch = [pool.submit(commit.apply, "g1", mark(index)) for index in range(1, 11)]
        wait_for(lambda: commit.waiting("g1") == 10)
        document.hold.set()
        assert first.result(10).changed
        for future in batch:
            with pytest.raises(ConflictError):
                future.result(10)
    assert document.group.marks == "s" + "q" * 11  # nothing of the failed batch is stored
    assert commit.waiting("g1") == 0
    assert commit.apply("g1", mark(11)).changed  # not stuck: the next caller leads a new write
    assert document.group.marks == "s" + "q" * 10 + "s"


def test_a_lone_failed_write_raises_to_its_caller() -> None:
    document = Document(queued_group(2))
    commit: GroupCommit[Group] = GroupCommit(document.update)
    document.failing[1] = ConflictError("kept changing")
    with pytest.raises(ConflictError):
        commit.apply("g1", mark(0))
    assert document.group.marks == "qq"
    assert commit.apply("g1", mark(0)).changed


def test_a_change_that_raises_fails_only_its_own_caller() -> None:
    def refuses(group: Group) -> Group | None:
        raise ValueError("not this one")

    document = Document(queued_group(3))
    commit: GroupCommit[Group] = GroupCommit(document.update)
    with ThreadPoolExecutor(max_workers=3) as pool:
        first = held_write(document, commit, pool, mark(0))
        bad = pool.submit(commit.apply, "g1", refuses)
        good = pool.submit(commit.apply, "g1", mark(2))
        wait_for(lambda: commit.waiting("g1") == 2)
        document.hold.set()
        assert first.result(10).changed
        with pytest.raises(ValueError, match="not this one"):
            bad.result(10)
        assert good.result(10).changed
    assert document.group.marks == "sqs"


def test_a_conflict_with_another_process_applies_every_change_again_to_what_it_wrote() -> None:
    document = Document(queued_group(4))
    commit: GroupCommit[Group] = GroupCommit(document.update)
    with ThreadPoolExecutor(max_workers=1) as pool:
        ours = held_write(document, commit, pool, mark(2))
        document.other_writer(mark(1, JobState.RUNNING))  # wins the race: our ETag check fails
        document.hold.set()
        outcome = ours.result(10)
    assert document.applied == 2  # read, applied, lost the ETag check, read and applied again
    assert outcome.changed
    assert outcome.prior.marks == "qrqq"
    assert document.group.marks == "qrsq"


def test_no_mark_is_lost_and_the_group_is_completed_once_under_racing_threads_and_another_writer() -> None:
    items = 300
    document = Document(queued_group(items))
    document.latency = 0.002
    commit: GroupCommit[Group] = GroupCommit(document.update, most=50)
    rng = random.Random(7)
    order = list(range(items))
    rng.shuffle(order)
    ends = {i: rng.choice([JobState.SUCCEEDED, JobState.SUCCEEDED, JobState.FAILED]) for i in range(items)}

    def item(index: int) -> list[Outcome[Group]]:
        time.sleep(rng.random() * 0.002)
        running = commit.apply("g1", mark(index, JobState.RUNNING))
        ended = commit.apply("g1", mark(index, ends[index]))
        if index % 10 == 0:
            document.other_writer(mark(index, ends[index]))  # the other process's reconciler, say
        return [running, ended]

    with ThreadPoolExecutor(max_workers=32) as pool:
        outcomes = [o for pair in pool.map(item, order) for o in pair]
    final = document.group
    assert final.marks == "".join("s" if ends[i] is JobState.SUCCEEDED else "f" for i in range(items))
    assert final.completed_at is not None
    assert sum(completes(outcome.prior, outcome.result) for outcome in outcomes) == 1
    assert document.writes < items  # joined: fewer writes than half the marks


def test_changes_of_different_groups_do_not_wait_for_each_other() -> None:
    held = threading.Event()
    entered = threading.Event()
    writes: list[str] = []

    def update(key: str, change: Callable[[Group], Group | None]) -> tuple[Group, bool]:
        if key == "slow":
            entered.set()
            assert held.wait(10)
        group = queued_group(1)
        writes.append(key)
        result = change(group)
        return (result or group), result is not None

    commit: GroupCommit[Group] = GroupCommit(update)
    with ThreadPoolExecutor(max_workers=2) as pool:
        slow = pool.submit(commit.apply, "slow", mark(0))
        assert entered.wait(10)
        assert commit.apply("fast", mark(0)).changed  # not behind the slow group's write
        held.set()
        assert slow.result(10).changed
    assert writes == ["fast", "slow"]


def test_a_lost_write_waits_a_random_time_growing_with_each_loss_and_capped() -> None:
    assert conflict_delay(1, 0.0) == 0.0
    assert conflict_delay(1, 0.999) < 0.01
    assert conflict_delay(2, 0.5) == pytest.approx(0.01)
    assert conflict_delay(4, 0.5) == pytest.approx(0.04)
    assert conflict_delay(39, 0.999) < 0.5
    assert conflict_delay(39, 0.999) > 0.49
    assert conflict_delay(10_000, 0.5) == pytest.approx(0.25)


def test_a_shared_documents_tries_wait_only_between_them_and_longer_after_each_loss() -> None:
    waits: list[float] = []
    attempts = list(backoff.tries(4, sleep=waits.append, draw=lambda: 0.5))
    assert attempts == [0, 1, 2, 3]
    assert waits == [pytest.approx(0.005), pytest.approx(0.01), pytest.approx(0.02)]  # none before the first
    assert list(backoff.tries(1, sleep=waits.append)) == [0]
    assert len(waits) == 3
