"""Job groups and dependencies (ADR 0040) through the real pipeline on Azurite and the local backend.

The queues are not consumed here: each test delivers the steps' messages itself (the group's
``make`` chunks, the items' submits and polls), so what the pipeline sends is what it is tested on.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

import pytest

from hastegeo.models.group import Group, item_job_id
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import GroupSlot, RequestRejected, parse_request
from hastegeo.pipeline.groups import CHUNK, parse_group
from hastegeo.runtime import Runtime
from hastegeo.store.queues import EVENTS_QUEUE, ITEMS_SUBMIT_QUEUE, SUBMIT_QUEUE, GroupMessage, JobMessage
from hastegeo.utils.errors import InvalidJobError
from tests.conftest import RuntimeFactory
from tests.support.processors import FAIL, ScriptProcessor

pytestmark = pytest.mark.azurite


def script_runtime(make_runtime: RuntimeFactory, **overrides: str) -> Runtime:
    runtime = make_runtime(**overrides)
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    return runtime


def group_body(count: int, **fields: Any) -> dict[str, Any]:
    return {"workload": "artifacts", "projectId": "p1", "items": [{"parameters": {}} for _ in range(count)], **fields}


def make_items(runtime: Runtime, group_id: str) -> int:
    """Deliver the group's make messages, chunk after chunk, as the queue would; how many were delivered."""
    message: GroupMessage | None = GroupMessage(group_id=group_id)
    delivered = 0
    while message is not None:
        message = runtime.groups.handle(message)
        delivered += 1
    return delivered


def run_until_ended(runtime: Runtime, job_ids: list[str], timeout: float = 120.0) -> dict[str, Job]:
    """Submit and poll every job until each has ended (a waiting job is submitted once its release says so)."""
    deadline = time.monotonic() + timeout
    left = set(job_ids)
    ended: dict[str, Job] = {}
    while left and time.monotonic() < deadline:
        for job_id in sorted(left):
            job = runtime.store.get(job_id)
            if job.state.terminal:
                ended[job_id] = job
                left.discard(job_id)
            elif job.state is JobState.QUEUED:
                runtime.submit.handle(JobMessage(job_id=job_id, kind="submit"))
            else:
                runtime.poll.handle(JobMessage(job_id=job_id, kind="poll", poll_seq=job.poll_seq))
        time.sleep(0.05)
    assert not left, {job_id: runtime.store.get(job_id).state for job_id in left}
    return ended


def accept_job(runtime: Runtime, **fields: Any) -> Job:
    body = {"workload": "artifacts", "projectId": "p1", **fields}
    return runtime.acceptor.accept(parse_request(body)).job


def ground_truth(runtime: Runtime, group: Group) -> dict[str, int]:
    states = Counter(runtime.store.get(group.job_id(i)).state.value for i in range(group.item_count))
    return {name: states.get(name, 0) for name in ("succeeded", "failed", "cancelled")}


def test_a_group_runs_its_items_as_jobs_and_counts_them_once(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    published: list[dict[str, Any]] = []
    events = runtime.queues.client(EVENTS_QUEUE)
    send = events.send_message

    def recording(text: str, **options: Any) -> Any:
        published.append(json.loads(text))
        return send(text, **options)

    events.send_message = recording  # type: ignore[method-assign]
    body = group_body(5, parameters={"sleep": 0}, labels={"run": "tiles"})
    body["items"][3] = {"parameters": {"script": FAIL}}
    group, created = runtime.groups.accept(parse_group(body))
    assert created
    assert group.counts()["notMade"] == 5
    assert make_items(runtime, group.id) == 1
    made = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert made.counts()["queued"] == 5
    assert made.made_at is not None
    ids = [item_job_id(group.id, i) for i in range(5)]
    jobs = run_until_ended(runtime, ids)
    for index, job_id in enumerate(ids):
        assert (jobs[job_id].group_id, jobs[job_id].group_index) == (group.id, index)
        assert jobs[job_id].labels == {"run": "tiles"}
    final = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    truth = ground_truth(runtime, final)
    assert truth == {"succeeded": 4, "failed": 1, "cancelled": 0}
    assert {k: final.counts()[k] for k in truth} == truth
    assert final.completed_at is not None
    assert final.completion_published
    assert [f.index for f in final.failures] == [3]
    assert "band 4 is missing" in (final.failures[0].reason or "")
    completions = [e for e in published if e["type"] == "com.haste.group.completed" and e["subject"] == group.id]
    assert len(completions) == 1
    assert completions[0]["data"]["counts"] == truth
    assert group.id not in runtime.deps.groups.open_groups()  # type: ignore[union-attr]

    # Making the items again (a redelivered message after a host died) makes nothing twice.
    make_items(runtime, group.id)
    assert runtime.deps.groups.get(group.id).counts() == final.counts()  # type: ignore[union-attr]

    # Retry reruns the failed item only, as a new job of the same item.
    retried, count = runtime.groups.retry(group.id)
    assert count == 1
    assert retried.completed_at is None
    make_items(runtime, group.id)
    assert run_until_ended(runtime, [item_job_id(group.id, 3, 1)])[item_job_id(group.id, 3, 1)].state is JobState.FAILED
    again = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert again.counts()["succeeded"] == 4
    assert again.counts()["failed"] == 1
    assert again.completed_at is not None


def test_a_groups_items_are_submitted_from_their_own_queue_so_a_single_job_is_not_read_behind_them(
    make_runtime: RuntimeFactory,
) -> None:
    """Fair share starts when a job's submit is read: a single job's must not wait behind a large group's items."""
    runtime = script_runtime(make_runtime)
    for queue in (SUBMIT_QUEUE, ITEMS_SUBMIT_QUEUE):  # the queues are the worker's: earlier tests leave messages
        runtime.queues.client(queue).clear_messages()
    group, _ = runtime.groups.accept(parse_group(group_body(3)))
    make_items(runtime, group.id)
    single = accept_job(runtime)

    def waiting_on(queue: str) -> list[str]:
        messages = runtime.queues.client(queue).peek_messages(32)
        return [JobMessage.model_validate_json(message.content).job_id for message in messages]

    assert sorted(waiting_on(ITEMS_SUBMIT_QUEUE)) == sorted(item_job_id(group.id, i) for i in range(3))
    assert waiting_on(SUBMIT_QUEUE) == [single.id]


def test_a_group_made_twice_by_a_host_that_died_half_way_holds_every_item_once(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    group, _ = runtime.groups.accept(parse_group(group_body(CHUNK + 30, parameters={"sleep": 0})))
    # The first chunk is made, and the host dies before it marks it: the message comes back.
    first = GroupMessage(group_id=group.id)
    request = runtime.deps.groups.request(group.id)  # type: ignore[union-attr]
    for index in range(40):
        runtime.acceptor.accept(
            request.item_request(index), job_id=group.job_id(index), group=GroupSlot(group.id, index)
        )
    following = runtime.groups.handle(first)
    assert following is not None
    runtime.groups.handle(following)
    runtime.groups.handle(following)  # delivered twice
    stored = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert stored.counts()["queued"] == CHUNK + 30
    jobs = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    names = [b.name for b in jobs.list_blobs(name_starts_with=f"jobs/{group.id}-")]
    assert len(names) == CHUNK + 30


def test_bad_group_requests_name_the_field_and_store_nothing(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    cases = {
        "items": group_body(0),
        "items.10000": group_body(10_001),
        "after": group_body(1, after=[f"k{i}" for i in range(51)]),
    }
    for field, body in cases.items():
        with pytest.raises(RequestRejected) as caught:
            parse_group(body)
        assert any(path.split(".")[0].startswith(field.split(".")[0]) for path, _ in caught.value.errors), field
    bad_item = group_body(20)
    bad_item["items"][17] = {"parameters": {"sleep": "soon"}}
    with pytest.raises(RequestRejected) as caught:
        runtime.groups.accept(parse_group(bad_item))
    assert [path for path, _ in caught.value.errors] == ["items[17].parameters.sleep"]
    with pytest.raises(RequestRejected) as caught:
        runtime.groups.accept(parse_group(group_body(2, after=["kmissing"])))
    assert caught.value.errors[0][0] == "after[0]"
    jobs = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    assert [b.name for b in jobs.list_blobs(name_starts_with="groups")] == []


def test_a_chain_of_three_waits_and_runs_in_order(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    a = accept_job(runtime, parameters={"sleep": 0.2})
    b = accept_job(runtime, after=[a.id])
    c = accept_job(runtime, after=[b.id])
    assert b.waiting_for == [a.id]
    assert f"waiting for job {a.id} (queued)" in b.history[-1].message
    runtime.submit.handle(JobMessage(job_id=b.id, kind="submit"))  # a stray submit does not start it
    assert runtime.store.get(b.id).state is JobState.QUEUED
    jobs = run_until_ended(runtime, [a.id, b.id, c.id])
    assert all(job.state is JobState.SUCCEEDED for job in jobs.values())
    assert jobs[a.id].finished_at <= jobs[b.id].started_at  # type: ignore[operator]
    assert jobs[b.id].finished_at <= jobs[c.id].started_at  # type: ignore[operator]


def test_a_diamond_releases_its_last_job_once_both_sides_succeeded(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    top = accept_job(runtime)
    left, right = accept_job(runtime, after=[top.id]), accept_job(runtime, after=[top.id], parameters={"sleep": 0.5})
    bottom = accept_job(runtime, after=[left.id, right.id])
    run_until_ended(runtime, [top.id, left.id])
    assert runtime.store.get(bottom.id).waiting_for == [right.id]
    jobs = run_until_ended(runtime, [right.id, bottom.id])
    assert jobs[bottom.id].state is JobState.SUCCEEDED
    assert jobs[right.id].finished_at <= jobs[bottom.id].started_at  # type: ignore[operator]


def test_an_upstream_failure_ends_its_dependents_without_running_them(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    a = accept_job(runtime, parameters={"script": FAIL})
    b = accept_job(runtime, after=[a.id])
    c = accept_job(runtime, after=[b.id])
    run_until_ended(runtime, [a.id])
    b_end, c_end = runtime.store.get(b.id), runtime.store.get(c.id)
    assert b_end.state is JobState.FAILED
    assert b_end.handle is None
    assert b_end.started_at is None
    assert b_end.reason is not None
    assert f"upstream job {a.id} failed" in b_end.reason
    assert "band 4 is missing" in b_end.reason
    assert c_end.state is JobState.FAILED
    assert f"upstream job {b.id} failed" in (c_end.reason or "")


def test_an_upstream_cancel_ends_its_dependents(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    a = accept_job(runtime)
    b = accept_job(runtime, after=[a.id])
    runtime.cancel.cancel(a.id)
    b_end = runtime.store.get(b.id)
    assert b_end.state is JobState.FAILED
    assert f"upstream job {a.id} was cancelled" in (b_end.reason or "")


def test_after_a_missing_job_or_another_projects_job_is_refused_alike(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    other = runtime.acceptor.accept(parse_request({"workload": "artifacts", "projectId": "p2"})).job
    refusals = []
    for upstream in (other.id, "kmissing0000000000000000"):
        with pytest.raises(InvalidJobError) as caught:
            accept_job(runtime, after=[upstream])
        refusals.append(str(caught.value).replace(upstream, "X"))
        assert caught.value.field == "after[0]"
    assert refusals[0] == refusals[1]


def test_an_input_of_a_job_not_yet_succeeded_becomes_an_implicit_after(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    a = accept_job(runtime)
    b = accept_job(runtime, inputs=[{"jobId": a.id}])
    assert b.after == [a.id]
    assert b.waiting_for == [a.id]
    jobs = run_until_ended(runtime, [a.id, b.id])
    assert jobs[b.id].state is JobState.SUCCEEDED


def test_a_job_after_a_group_runs_once_every_item_succeeded(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    group, _ = runtime.groups.accept(parse_group(group_body(3)))
    package = accept_job(runtime, after=[group.id])
    assert f"waiting for group {group.id} (0 of 3 ended)" in package.history[-1].message
    make_items(runtime, group.id)
    run_until_ended(runtime, [group.job_id(i) for i in range(3)])
    assert runtime.store.get(package.id).waiting_for == []
    assert run_until_ended(runtime, [package.id])[package.id].state is JobState.SUCCEEDED


def test_cancelling_a_group_ends_its_queued_items_and_completes_it(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime)
    group, _ = runtime.groups.accept(parse_group(group_body(4)))
    make_items(runtime, group.id)
    runtime.groups.cancel(group.id)
    runtime.groups.handle(GroupMessage(group_id=group.id, kind="cancel"))
    final = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert final.counts()["cancelled"] == 4
    assert final.completed_at is not None
    assert ground_truth(runtime, final)["cancelled"] == 4


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("HASTE_SCALE_TESTS") != "1",
    reason="runs 1,000 local processes (about 4.5 minutes on 2 cores): HASTE_SCALE_TESTS=1 runs it",
)
def test_a_thousand_item_group_ends_with_a_thousand_succeeded_jobs_counted_truly(make_runtime: RuntimeFactory) -> None:
    runtime = script_runtime(make_runtime, HASTE_LOCAL_SLOTS="4")
    started = time.monotonic()
    group, _ = runtime.groups.accept(parse_group(group_body(1000)))
    answered = time.monotonic() - started
    make_items(runtime, group.id)
    ids = [group.job_id(i) for i in range(1000)]
    jobs = run_until_ended(runtime, ids, timeout=280)
    final = runtime.deps.groups.get(group.id)  # type: ignore[union-attr]
    assert ground_truth(runtime, final) == {"succeeded": 1000, "failed": 0, "cancelled": 0}
    assert final.counts()["succeeded"] == 1000
    assert final.completed_at is not None
    assert all(len(job.history) >= 4 and job.state_changes for job in jobs.values())
    assert answered < 2.0
