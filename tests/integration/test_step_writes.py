"""One document write per move (ADR 0016): what a job looks like while the submit and end steps work.

The submit step stores nothing before the provider's submit (the job stays ``queued`` until the
write that stores the handle), and a quick post-processing stores its ``postprocessing`` move
with the end. The crash points (tests/chaos/test_crash_points.py) prove both recover; these tests
prove the history stays truthful and what the job looks like meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from hastegeo.compute.contract import BlobLocation, ComputeJobHandle, ComputeJobSpec, ComputeState
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.store.queues import JobMessage
from hastegeo.utils.errors import TransientBackendError
from hastegeo.workloads.processor import OutputAccess, PostprocessResult, Processor
from tests.conftest import RuntimeFactory
from tests.support.processors import ChainingScriptProcessor, ScriptProcessor

from .conftest import drive, request

pytestmark = pytest.mark.azurite
POSTPROCESS_S = 0.3
Submit = Callable[[str, ComputeJobSpec], ComputeJobHandle]


def accepted_with_submit(
    runtime: Runtime, around: Callable[[Submit, str, ComputeJobSpec], ComputeJobHandle], **fields: Any
) -> Job:
    """Accept a job whose provider submit goes through ``around(original, backend, spec)``."""
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    job = runtime.acceptor.accept(parse_request(request(inputs=[], **fields))).job
    original = runtime.deps.service.submit
    runtime.deps.service.submit = lambda backend, spec: around(original, backend, spec)  # type: ignore[method-assign]
    return job


def watching(processor: Processor, runtime: Runtime, seen: list[JobState]) -> Processor:
    """``processor``, noting the stored state of the job while it post-processes, and taking a while."""
    original = processor.postprocess

    def postprocess(job: Job, access: OutputAccess, output: BlobLocation) -> PostprocessResult:
        seen.append(runtime.store.get(job.id).state)
        time.sleep(POSTPROCESS_S)
        return original(job, access, output)

    processor.postprocess = postprocess  # type: ignore[method-assign]
    return processor


def succeeded_watching(make_runtime: RuntimeFactory, processor: Processor) -> tuple[Job, list[JobState]]:
    """Run one job to success through ``processor``; the job and the states stored while it post-processed."""
    runtime = make_runtime()
    seen: list[JobState] = []
    runtime.deps.processors["artifacts"] = watching(processor, runtime, seen)
    job = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    job = drive(runtime, job.id)
    assert job.state is JobState.SUCCEEDED, job.reason
    return job, seen


def test_quick_post_processing_is_stored_with_the_end_and_dated_when_it_began(make_runtime: RuntimeFactory) -> None:
    job, seen = succeeded_watching(make_runtime, ScriptProcessor())
    assert seen == [JobState.RUNNING]  # no write of its own before post-processing
    by_state = {event.state: event for event in job.history}
    states = [event.state for event in job.history]
    assert states.index(JobState.RUNNING) < states.index(JobState.POSTPROCESSING) < states.index(JobState.SUCCEEDED)
    began, ended = by_state[JobState.POSTPROCESSING].at, by_state[JobState.SUCCEEDED].at
    assert (ended - began).total_seconds() >= POSTPROCESS_S  # at its own time, not the write's
    assert by_state[JobState.POSTPROCESSING].message == "workload finished (exit code 0); post-processing"


def test_post_processing_that_starts_follow_ons_is_stored_first(make_runtime: RuntimeFactory) -> None:
    """A client can see a follow-on job as soon as it exists: its parent is shown post-processing by then."""
    job, seen = succeeded_watching(make_runtime, ChainingScriptProcessor())
    assert seen[0] is JobState.POSTPROCESSING
    assert any(event.message.startswith("started follow-on") for event in job.history)


def test_the_submitting_event_is_dated_when_the_submission_began(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    seen: list[JobState] = []

    def slow_submit(original: Submit, backend: str, spec: ComputeJobSpec) -> ComputeJobHandle:
        seen.append(runtime.store.get(spec.job_id).state)
        time.sleep(POSTPROCESS_S)
        return original(backend, spec)

    job = accepted_with_submit(runtime, slow_submit)
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    bound = runtime.store.get(job.id)
    assert seen == [JobState.QUEUED]  # nothing stored before the provider's submit
    assert [(e.state, e.message.split(" (")[0]) for e in bound.history[1:]] == [
        (JobState.SUBMITTING, "submitting to local"),
        (JobState.RUNNING, "submitted to local"),
    ]
    assert (bound.history[2].at - bound.history[1].at).total_seconds() >= POSTPROCESS_S
    assert bound.attempts.submit == 1
    assert drive(runtime, job.id).state is JobState.SUCCEEDED


def test_a_job_cancelled_while_it_is_submitted_has_its_provider_job_stopped(make_runtime: RuntimeFactory) -> None:
    """The job is still queued while the provider takes it, so a cancel then ends it at once; the
    submit step, finding it ended when it comes to store the handle, stops the provider's job."""
    runtime = make_runtime()
    handles: list[ComputeJobHandle] = []

    def submit_then_cancel(original: Submit, backend: str, spec: ComputeJobSpec) -> ComputeJobHandle:
        handles.append(original(backend, spec))
        assert runtime.cancel.cancel(spec.job_id).state is JobState.CANCELLED
        return handles[-1]

    job = accepted_with_submit(runtime, submit_then_cancel, parameters={"sleep": 30})
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    stored = runtime.store.get(job.id)
    assert (stored.state, stored.handle) == (JobState.CANCELLED, None)
    deadline = time.monotonic() + 20
    while (status := runtime.deps.service.status(handles[0])).state is not ComputeState.CANCELLED:
        assert time.monotonic() < deadline, f"the provider job was left {status.state.value}"
        time.sleep(0.1)


def test_a_failed_submit_attempt_is_counted_by_its_own_write(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    calls: list[str] = []

    def flaky_submit(original: Submit, backend: str, spec: ComputeJobSpec) -> ComputeJobHandle:
        calls.append(spec.job_id)
        if len(calls) == 1:
            raise TransientBackendError("ServerBusy: try again", backend=backend)
        return original(backend, spec)

    job = accepted_with_submit(runtime, flaky_submit)
    message = JobMessage(job_id=job.id, kind="submit")
    with pytest.raises(TransientBackendError):
        runtime.submit.handle(message)  # the queue redelivers it
    failed = runtime.store.get(job.id)
    assert (failed.state, failed.attempts.submit) == (JobState.QUEUED, 1)
    assert failed.history[-1].message == "submit attempt 1 on local failed, will retry: ServerBusy: try again"
    runtime.submit.handle(message)
    bound = runtime.store.get(job.id)
    assert (bound.state, bound.attempts.submit) == (JobState.RUNNING, 2)
    assert [e.message.split(" (")[0] for e in bound.history[-2:]] == ["submitting to local", "submitted to local"]
    assert bound.history[-2].message == "submitting to local (attempt 2)"
    assert drive(runtime, job.id).state is JobState.SUCCEEDED
