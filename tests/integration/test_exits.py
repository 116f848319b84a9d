"""A workload's exit handled by the process that saw it (``inline_exits``), against Azurite and real processes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.exits import ExitHandler
from hastegeo.runtime import Runtime
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo.workloads.processor import OutputAccess, PostprocessResult
from tests.conftest import RuntimeFactory
from tests.support.processors import ScriptProcessor
from tests.support.runtime import development_runtime

from .conftest import request

pytestmark = pytest.mark.azurite


@pytest.fixture
def inline(make_runtime: RuntimeFactory) -> Iterator[Runtime]:
    """A runtime that handles exits where they are seen, as the Functions app's runtime does."""
    runtime = development_runtime(make_runtime(HASTE_POLL_INITIAL_S="30").settings, inline_exits=True)
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    for queue in (SUBMIT_QUEUE, POLL_QUEUE):
        runtime.queues.client(queue).clear_messages()
    yield runtime
    for adapter in runtime.registry.built().values():
        adapter.close()


def visible_messages(runtime: Runtime) -> list[JobMessage]:
    client = runtime.queues.client(POLL_QUEUE)
    return [JobMessage.model_validate_json(m.content) for m in client.peek_messages(max_messages=32)]


def wait_for(runtime: Runtime, job_id: str, states: set[JobState], timeout: float = 30.0) -> JobState:
    deadline = time.monotonic() + timeout
    while (state := runtime.store.get(job_id).state) not in states:
        assert time.monotonic() < deadline, f"job {job_id} stayed {state.value}"
        time.sleep(0.05)
    return state


def submitted(runtime: Runtime, **fields: object) -> str:
    job = runtime.acceptor.accept(parse_request(request(inputs=[], **fields))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    return job.id


def test_an_exit_ends_the_job_without_any_poll_message_delivered(inline: Runtime) -> None:
    job_id = submitted(inline)
    # Nothing delivers the poll queue here, and its chain message waits 30 s: only the exit can end it.
    assert wait_for(inline, job_id, {JobState.SUCCEEDED, JobState.FAILED}) is JobState.SUCCEEDED
    job = inline.store.get(job_id)
    assert [event.message for event in job.history][-1] == "succeeded with 2 output(s)"
    assert job.attempts.poll == 0  # no poll of the chain ran
    assert [m for m in visible_messages(inline) if m.kind == "nudge"] == []  # no message was needed


class Unavailable(ScriptProcessor):
    """Post-processing that fails the way an outage does (not a verdict on the outputs)."""

    def postprocess(self, job: object, access: OutputAccess, output: object) -> PostprocessResult:
        raise ConnectionError("storage stopped answering")


def test_an_exit_that_cannot_be_handled_here_goes_to_the_poll_queue(inline: Runtime) -> None:
    inline.deps.processors["artifacts"] = Unavailable()
    job_id = submitted(inline)
    deadline = time.monotonic() + 30
    while not (nudges := [m for m in visible_messages(inline) if m.kind == "nudge"]):
        assert time.monotonic() < deadline, "the exit was neither handled nor handed to the queue"
        time.sleep(0.05)
    assert nudges == [JobMessage(job_id=job_id, kind="nudge")]
    # The step got as far as post-processing, which stores its move with the end (ADR 0016): the job
    # is still running, and the queue's delivery (or the chain) post-processes it again and ends it.
    assert inline.store.get(job_id).state is JobState.RUNNING
    inline.deps.processors["artifacts"] = ScriptProcessor()
    inline.poll.handle(nudges[0])
    job = inline.store.get(job_id)
    assert job.state is JobState.SUCCEEDED
    finished = [event for event in job.history if event.message.startswith("workload finished")]
    assert [event.state for event in finished] == [JobState.POSTPROCESSING]  # once, though post-processed twice


def test_a_failing_handler_and_a_failing_queue_are_both_only_logged(caplog: pytest.LogCaptureFixture) -> None:
    sent: list[JobMessage] = []

    def poll(message: JobMessage) -> None:
        raise TimeoutError("no storage")

    def fallback(message: JobMessage) -> None:
        sent.append(message)
        raise TimeoutError("no queue either")

    ExitHandler(poll, fallback).run("j1")  # returns: the watcher thread must survive both
    assert sent == [JobMessage(job_id="j1", kind="nudge")]
    assert "sending it to the poll queue" in caplog.text
    assert "its poll chain will find it" in caplog.text
