"""A group's marks from many threads at once, on Azurite (ADR 0049): joined into few writes, none lost,
the group announced once; and the store's wait between tries after another writer won.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from hastegeo.models.group import Group, item_job_id
from hastegeo.models.states import JobState
from hastegeo.pipeline.group_commit import GroupCommit
from hastegeo.pipeline.groups import parse_group
from hastegeo.runtime import Runtime
from hastegeo.store.groups import GroupStore
from hastegeo.store.queues import EVENTS_QUEUE
from tests.conftest import RuntimeFactory
from tests.integration.test_groups import group_body, make_items, script_runtime

pytestmark = pytest.mark.azurite


def made_group(runtime: Runtime, items: int) -> Group:
    group, _ = runtime.groups.accept(parse_group(group_body(items)))
    make_items(runtime, group.id)
    assert runtime.deps.groups is not None
    made = runtime.deps.groups.get(group.id)
    assert made.marks == "q" * items
    return made


def recorded_events(runtime: Runtime) -> list[dict[str, Any]]:
    published: list[dict[str, Any]] = []
    events = runtime.queues.client(EVENTS_QUEUE)
    send = events.send_message
    lock = threading.Lock()

    def recording(text: str, **options: Any) -> Any:
        with lock:
            published.append(json.loads(text))
        return send(text, **options)

    events.send_message = recording  # type: ignore[method-assign]
    return published


def test_items_ending_at_once_are_all_marked_and_their_group_is_announced_once(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    items = 48
    group = made_group(runtime, items)
    published = recorded_events(runtime)
    jobs = [runtime.store.get(item_job_id(group.id, index)) for index in range(items)]
    ends = [JobState.FAILED if index % 7 == 3 else JobState.SUCCEEDED for index in range(items)]

    def run_and_end(index: int) -> None:
        running = jobs[index].model_copy(update={"state": JobState.RUNNING})
        runtime.groups.after_write(JobState.QUEUED, running)
        runtime.groups.after_write(JobState.RUNNING, running.model_copy(update={"state": ends[index]}))

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(run_and_end, range(items)))
    assert runtime.deps.groups is not None
    final = runtime.deps.groups.get(group.id)
    assert final.marks == "".join("f" if end is JobState.FAILED else "s" for end in ends)
    assert final.completed_at is not None
    assert final.completion_published
    assert sorted(f.index for f in final.failures) == [i for i in range(items) if ends[i] is JobState.FAILED]
    completions = [e for e in published if e["type"] == "com.haste.group.completed" and e["subject"] == group.id]
    assert len(completions) == 1
    assert completions[0]["data"]["counts"]["failed"] == ends.count(JobState.FAILED)
    assert group.id not in runtime.deps.groups.open_groups()


def test_marks_racing_on_the_real_store_join_into_fewer_writes(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    items = 60
    group = made_group(runtime, items)
    assert runtime.deps.groups is not None
    store = runtime.deps.groups
    writes: list[int] = []

    def update(key: str, change: Callable[[Group], Group | None]) -> tuple[Group, bool]:
        stored, wrote = store.update(key, change)
        writes.append(wrote)
        return stored, wrote

    commit: GroupCommit[Group] = GroupCommit(update)
    start = threading.Barrier(20)

    def mark(index: int) -> bool:
        if index < 20:
            start.wait(10)

        def change(current: Group) -> Group | None:
            return current.marked(index, 0, JobState.SUCCEEDED, item_job_id(group.id, index), None, current.updated_at)

        return commit.apply(group.id, change).changed

    with ThreadPoolExecutor(max_workers=20) as pool:
        assert all(pool.map(mark, range(items)))
    assert store.get(group.id).marks == "s" * items
    assert sum(writes) < items  # one write carried several marks
    assert sum(writes) == len(writes)


def test_a_write_that_lost_to_another_writer_waits_a_short_random_time_then_reads_again(
    make_runtime: RuntimeFactory,
) -> None:
    runtime = script_runtime(make_runtime)
    group = made_group(runtime, 3)
    assert runtime.deps.groups is not None
    other = runtime.deps.groups
    waits: list[float] = []
    store = GroupStore(
        runtime.blobs.get_container_client(runtime.settings.storage.jobs_container),
        sleep=waits.append,
        draw=lambda: 0.5,
    )
    seen: list[str] = []

    def change(current: Group) -> Group | None:
        seen.append(current.marks)
        if len(seen) == 1:  # another writer is first: this try's ETag check fails
            other.update(group.id, lambda g: g.marked(0, 0, JobState.RUNNING, "x", None, g.updated_at))
        return current.marked(2, 0, JobState.RUNNING, "y", None, current.updated_at)

    stored, wrote = store.update(group.id, change)
    assert wrote
    assert seen == ["qqq", "rqq"]  # read again after the loss, and applied to what the other wrote
    assert stored.marks == "rqr"
    assert waits == [pytest.approx(0.005)]  # half (the draw) of the first loss's bound, 10 ms
