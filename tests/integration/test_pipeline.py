"""The pipeline's steps against real Azurite and the real local backend (queues not consumed here)."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import ComputeBackend, ComputeJobHandle, ComputeJobSpec, ComputeStatus, OutputRead
from hastegeo.compute.router import ComputeRouter
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import JobAcceptor, parse_request
from hastegeo.runtime import Runtime
from hastegeo.store.queues import SUBMIT_QUEUE, JobMessage
from hastegeo.utils.errors import BackendUnavailableError, ConflictError, TerminalBackendError
from tests.conftest import RuntimeFactory
from tests.support.processors import FAIL, ScriptProcessor
from tests.support.runtime import development_runtime

from .conftest import drive, put_input, request

pytestmark = pytest.mark.azurite


def submit(runtime: Runtime, **fields: Any) -> str:
    job = runtime.acceptor.accept(parse_request(request(**fields))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    return job.id


def with_script(runtime: Runtime) -> Runtime:
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    return runtime


def test_artifacts_job_runs_end_to_end(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    put_input(runtime, "p1/a.txt", b"alpha")
    put_input(runtime, "p1/b.txt", b"beta" * 1000)
    job = drive(runtime, submit(runtime, inputs=[{"blob": "p1/a.txt"}, {"blob": "p1/b.txt", "dest": "docs/b.txt"}]))
    assert job.state is JobState.SUCCEEDED, job.reason
    assert next(e.state.value for e in job.history) == "queued"
    states = [e.state for e in job.history]
    assert states.index(JobState.RUNNING) < states.index(JobState.POSTPROCESSING) < states.index(JobState.SUCCEEDED)
    names = {o.name for o in job.outputs}
    assert names == {"outputs/artifacts.zip", "outputs/artifacts_manifest.json"}
    outputs = runtime.blobs.get_container_client(runtime.settings.storage.outputs_container)
    stored = {b.name for b in outputs.list_blobs(name_starts_with=f"jobs/{job.id}/")}
    assert f"jobs/{job.id}/outputs/artifacts.zip" in stored
    assert f"jobs/{job.id}/logs/artifacts_progress.log" in stored
    assert job.summary == {"files": 2, "bytes": 5 + 4000}


def test_persist_before_enqueue(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    seen: list[bool] = []
    original = runtime.queues.send

    def checking_send(queue: str, message: JobMessage, delay_s: float = 0) -> None:
        seen.append(runtime.store.find(message.job_id) is not None)
        original(queue, message, delay_s)

    runtime.queues.send = checking_send  # type: ignore[method-assign]
    runtime.acceptor.accept(parse_request(request()))
    assert seen == [True]


def test_duplicate_submit_messages_start_one_process(make_runtime: RuntimeFactory, tmp_path: Path) -> None:
    runtime = make_runtime()
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request())).job
    message = JobMessage(job_id=job.id, kind="submit")
    barrier = threading.Barrier(3)

    def deliver() -> None:
        barrier.wait()
        runtime.submit.handle(message)

    threads = [threading.Thread(target=deliver) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    runtime.submit.handle(message)  # and once more, after the fact
    finished = drive(runtime, job.id)
    assert finished.state is JobState.SUCCEEDED
    launches = (tmp_path / "local" / "jobs" / f"haste-{job.id}" / "state" / "launches.log").read_text()
    assert len(launches.splitlines()) == 1
    assert sum(1 for e in finished.history if e.message.startswith("submitted to")) == 1


def test_failing_workload_reports_exit_code_and_last_log_lines(make_runtime: RuntimeFactory) -> None:
    runtime = with_script(make_runtime())
    job = drive(runtime, submit(runtime, inputs=[], parameters={"script": FAIL}))
    assert job.state is JobState.FAILED
    assert job.reason is not None
    assert "code 3" in job.reason
    assert "ValueError: band 4 is missing" in job.reason
    assert job.history[-1].message.startswith("failed:")


def test_missing_input_fails_the_job_with_a_readable_reason(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    job = runtime.store.get(submit(runtime, inputs=[{"blob": "p1/nothing-here.txt"}]))
    assert job.state is JobState.FAILED
    assert job.reason is not None
    assert job.reason.startswith("an input is missing: BlobNotFound")


def test_cancel_running_job(make_runtime: RuntimeFactory) -> None:
    runtime = with_script(make_runtime())
    job_id = submit(runtime, inputs=[], parameters={"sleep": 30})
    job = runtime.cancel.cancel(job_id)
    assert job.state is JobState.CANCEL_REQUESTED
    assert runtime.cancel.cancel(job_id) == runtime.store.get(job_id)  # idempotent while being cancelled
    assert runtime.store.get(job_id).history == job.history
    job = drive(runtime, job_id)
    assert job.state is JobState.CANCELLED
    assert job.outputs == []
    with pytest.raises(ConflictError, match="already ended"):  # an ended job has nothing left to cancel
        runtime.cancel.cancel(job_id)
    assert runtime.store.get(job_id) == job


def test_cancel_queued_job_never_runs(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    job = runtime.acceptor.accept(parse_request(request())).job
    assert runtime.cancel.cancel(job.id).state is JobState.CANCELLED
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    after = runtime.store.get(job.id)
    assert after.state is JobState.CANCELLED
    assert after.handle is None


def test_idempotency_key_returns_the_same_job(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    first = runtime.acceptor.accept(parse_request(request()), idempotency_key="abc")
    again = runtime.acceptor.accept(parse_request(request()), idempotency_key="abc")
    assert first.created
    assert not again.created
    assert first.job.id == again.job.id
    with pytest.raises(ConflictError, match="different request"):
        runtime.acceptor.accept(parse_request(request(labels={"x": "y"})), idempotency_key="abc")


def test_a_replay_gets_its_job_even_when_routing_now_refuses_the_request(make_runtime: RuntimeFactory) -> None:
    """A keyed request is created without a read first; a retry whose routing fails since (every backend
    disabled, here) is still answered with the job the first attempt stored, and nothing new is stored."""
    runtime = make_runtime()
    first = runtime.acceptor.accept(parse_request(request()), idempotency_key="abc")
    refusing = JobAcceptor(dataclasses.replace(runtime.deps, router=ComputeRouter({})))
    again = refusing.accept(parse_request(request()), idempotency_key="abc")
    assert (again.created, again.job) == (False, first.job)
    with pytest.raises(ConflictError, match="different request"):
        refusing.accept(parse_request(request(labels={"x": "y"})), idempotency_key="abc")
    for key in ("new-key", None):  # a request no job answers is refused as before
        with pytest.raises(BackendUnavailableError):
            refusing.accept(parse_request(request()), idempotency_key=key)
    assert [job.id for job in runtime.store.list("p1").jobs] == [first.job.id]


def test_poison_message_fails_the_job_with_the_last_error(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    job = runtime.acceptor.accept(parse_request(request())).job
    runtime.journal.update(job.id, lambda j: j.model_copy(update={"last_error": "ServerBusy: The server is busy."}))
    runtime.poison.handle(JobMessage(job_id=job.id, kind="submit").encode(), SUBMIT_QUEUE)
    failed = runtime.store.get(job.id)
    assert failed.state is JobState.FAILED
    assert failed.reason == (
        "gave up after repeated failures of the submit step; last error: ServerBusy: The server is busy."
    )


class LeakyBackend(ComputeBackend):
    """A backend whose provider error carries a signed URL, as real SDK errors do."""

    name = "local"

    def __init__(self, context: BackendContext) -> None:
        pass

    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle:
        raise TerminalBackendError(
            "AuthorizationFailure: cannot read https://acct.blob.core.windows.net/in/a.tif?sv=2024&sig=S3CR3T%2B"
        )

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        raise NotImplementedError

    def read_output(self, handle: ComputeJobHandle, path: str) -> OutputRead:
        return OutputRead(data=None)

    def cancel(self, handle: ComputeJobHandle) -> None:
        pass

    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> None:
        pass

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        return []


def test_signed_url_in_a_provider_error_is_redacted_in_history(make_runtime: RuntimeFactory) -> None:
    runtime = development_runtime(make_runtime().settings, factories={"local": LeakyBackend})
    job = runtime.store.get(submit(runtime))
    assert job.state is JobState.FAILED
    document = job.model_dump_json()
    assert "S3CR3T" not in document
    assert "AuthorizationFailure: cannot read https://acct.blob.core.windows.net/in/a.tif?sv=2024&sig=[REDACTED]" in (
        job.reason or ""
    )


def test_upstream_requests_are_validated_and_deduplicated(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    body = '{"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}'
    first = runtime.upstream.handle(body, "msg-1")
    again = runtime.upstream.handle(body, "msg-1")  # redelivered
    assert first is not None
    assert first == again
    assert runtime.upstream.handle('{"workload": "artifacts", "projectId": "p1", "state": "x"}', "msg-2") is None
    assert runtime.upstream.handle("{not json", "msg-3") is None
    jobs = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    rejected = sorted(b.name for b in jobs.list_blobs(name_starts_with="rejected/"))
    assert len(rejected) == 2
    record = jobs.download_blob(rejected[0]).readall().decode()
    assert "state" in record or "not valid JSON" in record


def test_follow_on_inherits_the_backend_links_to_its_parent_and_is_created_once(
    make_runtime: RuntimeFactory,
) -> None:
    from tests.support.processors import ChainingScriptProcessor

    runtime = make_runtime()
    runtime.deps.processors["training"] = ChainingScriptProcessor()
    parent = runtime.acceptor.accept(
        parse_request({"workload": "training", "projectId": "p1", "backend": "local", "parameters": {}})
    ).job
    # The first post-processing dies after starting the follow-on and before recording success,
    # so the redelivered message post-processes again: it must find the follow-on, not add one.
    cleanup = runtime.deps.service.cleanup
    crashes = []

    def crash_once(handle: Any, unavailable_reason: str | None = None) -> str | None:
        if not crashes:
            crashes.append(handle)
            raise RuntimeError("the worker died")
        return cleanup(handle, unavailable_reason)

    runtime.deps.service.cleanup = crash_once  # type: ignore[method-assign]
    runtime.submit.handle(JobMessage(job_id=parent.id, kind="submit"))
    with pytest.raises(RuntimeError, match="the worker died"):
        drive(runtime, parent.id)
    finished = drive(runtime, parent.id)
    assert finished.state is JobState.SUCCEEDED, finished.reason
    assert len(crashes) == 1
    children = [j for j in runtime.store.list("p1").jobs if j.parent_job_id == parent.id]
    assert len(children) == 1
    child = children[0]
    assert (child.workload, child.backend, child.requested_backend) == ("artifacts", "local", "local")
    assert any(f"started follow-on artifacts job {child.id}" in e.message for e in finished.history)
    runtime.submit.handle(JobMessage(job_id=child.id, kind="submit"))  # the queue is not consumed here
    packaged = drive(runtime, child.id)
    assert packaged.state is JobState.SUCCEEDED, packaged.reason
    assert packaged.summary["files"] == 2  # the parent's result.txt and its manifest


def test_a_cancelled_parent_starts_no_follow_on(make_runtime: RuntimeFactory) -> None:
    from tests.support.processors import ChainingScriptProcessor

    runtime = make_runtime()
    runtime.deps.processors["training"] = ChainingScriptProcessor()
    parent = runtime.acceptor.accept(
        parse_request({"workload": "training", "projectId": "p1", "parameters": {"sleep": 30}})
    ).job
    runtime.submit.handle(JobMessage(job_id=parent.id, kind="submit"))
    runtime.cancel.cancel(parent.id)
    assert drive(runtime, parent.id).state is JobState.CANCELLED
    assert [j for j in runtime.store.list("p1").jobs if j.parent_job_id == parent.id] == []


def test_progress_lines_reach_the_history_while_the_job_runs_once_each(make_runtime: RuntimeFactory) -> None:
    from tests.support.processors import PROGRESS

    runtime = with_script(make_runtime())
    job = drive(runtime, submit(runtime, inputs=[], parameters={"script": PROGRESS}))
    assert job.state is JobState.SUCCEEDED, job.reason
    messages = [(e.state, e.message) for e in job.history]
    steps = [m for _, m in messages if m.startswith("step ")]
    assert steps == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert (JobState.RUNNING, "step 1 of 3") in messages  # seen while running, not only at the end
    assert [m for _, m in messages].count("script finished") == 1
