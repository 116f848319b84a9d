"""The poll chain's pending message: named by the write that extends the chain, deleted when the job ends first."""

from __future__ import annotations

import time

import pytest

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from tests.conftest import RuntimeFactory
from tests.support.processors import ScriptProcessor

from .conftest import request

pytestmark = pytest.mark.azurite


def prepared(runtime: Runtime) -> Runtime:
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    for queue in (SUBMIT_QUEUE, POLL_QUEUE):
        runtime.queues.client(queue).clear_messages()
    return runtime


def queued(runtime: Runtime) -> int:
    """Messages on the poll queue, visible or not."""
    return int(runtime.queues.client(POLL_QUEUE).get_queue_properties().approximate_message_count)


def own_visible(runtime: Runtime, job_id: str) -> list[JobMessage]:
    """The visible messages on the poll queue that are about ``job_id``."""
    peeked = runtime.queues.client(POLL_QUEUE).peek_messages(max_messages=32)
    return [
        message
        for message in map(JobMessage.model_validate_json, (m.content for m in peeked))
        if message.job_id == job_id
    ]


def test_a_nudge_that_ends_the_job_deletes_the_chains_pending_message(make_runtime: RuntimeFactory) -> None:
    runtime = prepared(make_runtime(HASTE_POLL_INITIAL_S="60"))
    job_id = runtime.acceptor.accept(parse_request(request(inputs=[]))).job.id
    runtime.submit.handle(JobMessage(job_id=job_id, kind="submit"))
    pending = runtime.store.get(job_id).poll_message
    assert pending is not None  # the bind named the chain's first message
    deadline = time.monotonic() + 30
    while queued(runtime) < 2:  # the chain's message, and the nudge the exit watcher sends
        assert time.monotonic() < deadline, "the workload's exit was not nudged"
        time.sleep(0.05)
    runtime.poll.handle(JobMessage(job_id=job_id, kind="nudge"))
    job = runtime.store.get(job_id)
    assert job.state is JobState.SUCCEEDED
    assert queued(runtime) == 1  # only the nudge this test did not consume: the chain's message is gone
    assert "pollMessage" not in job.api_view()  # bookkeeping, never shown


@pytest.mark.parametrize("state", [JobState.QUEUED, JobState.SUBMITTING])
def test_a_chain_message_that_arrives_before_the_handle_is_stored_comes_back(
    make_runtime: RuntimeFactory, state: JobState
) -> None:
    """The submit step leaves the job queued until the write that stores the handle (documents of an
    earlier release may say ``submitting``); a chain message that arrives before it waits for it."""
    runtime = prepared(make_runtime(HASTE_POLL_INITIAL_S="1"))
    job_id = runtime.acceptor.accept(parse_request(request(inputs=[]))).job.id
    first = JobMessage(job_id=job_id, kind="poll", poll_seq=0)
    if state is JobState.SUBMITTING:
        runtime.journal.update(job_id, lambda j: runtime.deps.event(j, "submitting", "submit", state=state))
    runtime.poll.handle(first)  # the submit step sent it and has not stored the handle yet
    deadline = time.monotonic() + 10
    # Only this job's messages: the queue is the worker's, and an earlier test's workload may still nudge it.
    while not (visible := own_visible(runtime, job_id)):
        assert time.monotonic() < deadline, "the chain's first message was dropped"
        time.sleep(0.1)
    assert [(again.kind, again.poll_seq) for again in visible] == [("poll", 0)]  # the same link of the same chain
