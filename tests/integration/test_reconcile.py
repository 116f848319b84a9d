"""The reconciler against Azurite and the local backend, with a clock the test moves."""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

import pytest

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import ComputeJobHandle, ComputeJobSpec, ComputeStatus
from hastegeo.compute.descriptor import BackendDescriptor
from hastegeo.compute.local.adapter import LocalBackend
from hastegeo.compute.local.adapter import create as create_local
from hastegeo.compute.local.settings import LocalSettings
from hastegeo.compute.registry import BackendRegistry
from hastegeo.compute.service import ExecutionService
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.deadlines import expire
from hastegeo.pipeline.reconcile import CHAIN_GRACE_S, ReconcileStep
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from tests.conftest import RuntimeFactory
from tests.support.clock import Clock
from tests.support.processors import ScriptProcessor
from tests.support.runtime import development_runtime

from .conftest import drive, request

pytestmark = pytest.mark.azurite


@pytest.fixture
def clocked(make_runtime: RuntimeFactory) -> tuple[Runtime, Clock]:
    clock = Clock()
    runtime = development_runtime(make_runtime().settings, clock=clock)
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    return runtime, clock


def queued_messages(runtime: Runtime, queue: str) -> list[JobMessage]:
    client = runtime.queues.client(queue)
    return [JobMessage.model_validate_json(m.content) for m in client.peek_messages(max_messages=32)]


def queued_count(runtime: Runtime, queue: str) -> int:
    """Messages on ``queue``, visible or not (a chain's next message waits for its delay in real time)."""
    return int(runtime.queues.client(queue).get_queue_properties().approximate_message_count)


def drain(runtime: Runtime) -> None:
    for queue in (SUBMIT_QUEUE, POLL_QUEUE):
        runtime.queues.client(queue).clear_messages()


def test_a_lost_submit_message_is_sent_again(clocked: tuple[Runtime, Clock]) -> None:
    runtime, clock = clocked
    drain(runtime)
    job = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    drain(runtime)  # the message is lost
    assert runtime.reconcile.run().resubmitted == []  # too early: the first delivery may still come
    clock.advance(60)
    assert runtime.reconcile.run().resubmitted == [job.id]
    assert JobMessage(job_id=job.id, kind="submit") in queued_messages(runtime, SUBMIT_QUEUE)


def test_a_job_past_its_deadline_fails_with_the_reason(clocked: tuple[Runtime, Clock]) -> None:
    runtime, clock = clocked
    job = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    clock.advance(runtime.settings.pipeline.queued_deadline_s + 1)
    assert runtime.reconcile.run().expired == [job.id]
    failed = runtime.store.get(job.id)
    assert failed.state is JobState.FAILED
    assert failed.reason == f"was not submitted before its deadline ({runtime.settings.pipeline.queued_deadline_s}s)"
    assert runtime.reconcile.run().expired == []  # terminal jobs are left alone


def test_a_deadline_is_not_past_until_it_is_and_never_overrides_an_ending(
    clocked: tuple[Runtime, Clock], caplog: pytest.LogCaptureFixture
) -> None:
    """A job is expired only past its last moment, once (one "ended" record), and a copy read before
    another step ended the job does not turn that ending into a failure."""
    runtime, clock = clocked
    ending, expiring = (runtime.acceptor.accept(parse_request(request(inputs=[]))).job for _ in range(2))
    clock.now = max(ending.deadline_at, expiring.deadline_at)
    assert runtime.reconcile.run().expired == []  # at the deadline, not past it
    assert not expire(runtime.deps, expiring, "test")
    assert runtime.journal.end(ending.id, JobState.CANCELLED, "cancelled", source="test", reason=None)
    clock.advance(0.001)
    with caplog.at_level(logging.INFO, logger="hastegeo.pipeline.journal"):
        assert not expire(runtime.deps, ending, "test")  # the copy says queued; the store says cancelled
        assert expire(runtime.deps, expiring, "test")
    assert runtime.store.get(ending.id).state is JobState.CANCELLED
    failed = runtime.store.get(expiring.id)
    assert failed.state is JobState.FAILED
    said = [record.getMessage() for record in caplog.records if record.getMessage().startswith("job ")]
    assert said == [f"job {expiring.id} failed: {failed.reason}"]


def test_a_copy_read_before_the_job_started_is_held_to_the_stored_deadline(clocked: tuple[Runtime, Clock]) -> None:
    """A step's copy of a queued job carries the queued deadline; the stored job, now running, has its
    run deadline: that one decides, and the provider job is stopped only when the job is expired."""
    runtime, clock = clocked
    queued = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    runtime.submit.handle(JobMessage(job_id=queued.id, kind="submit"))
    running = runtime.store.get(queued.id)
    assert running.state is JobState.RUNNING
    assert running.deadline_at > queued.deadline_at
    stopped: list[ComputeJobHandle] = []
    cancel = runtime.deps.service.cancel

    def recorded(handle: ComputeJobHandle) -> None:
        stopped.append(handle)
        cancel(handle)

    runtime.deps.service.cancel = recorded  # type: ignore[method-assign]
    for now in (queued.deadline_at + timedelta(seconds=1), running.deadline_at):
        clock.now = now
        assert not expire(runtime.deps, queued, "test")
        assert runtime.store.get(queued.id).state is JobState.RUNNING
    assert stopped == []
    clock.advance(0.001)
    assert expire(runtime.deps, queued, "test")
    assert runtime.store.get(queued.id).state is JobState.FAILED
    assert stopped == [running.handle]


def test_a_running_job_past_its_deadline_is_failed_and_its_process_stopped(
    clocked: tuple[Runtime, Clock], tmp_path: Path
) -> None:
    runtime, clock = clocked
    job = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    clock.advance(runtime.settings.pipeline.run_deadline_s + 1)
    assert runtime.reconcile.run().expired == [job.id]
    assert runtime.store.get(job.id).reason == (
        f"did not finish before its deadline ({runtime.settings.pipeline.run_deadline_s}s)"
    )
    exit_file = tmp_path / "local" / "jobs" / f"haste-{job.id}" / "state" / "exit.json"
    deadline = time.monotonic() + 15
    while not exit_file.exists():
        assert time.monotonic() < deadline, "the workload was not stopped"
        time.sleep(0.05)
    assert '"cancelled": true' in exit_file.read_text()


def test_a_job_whose_files_never_reach_storage_says_why_at_its_deadline(
    clocked: tuple[Runtime, Clock], tmp_path: Path
) -> None:
    """The workload ended, but its outputs could not be uploaded until the deadline: the reason says both."""
    runtime, clock = clocked
    job = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    runtime.blobs.get_container_client(runtime.settings.storage.outputs_container).delete_container()
    exit_file = tmp_path / "local" / "jobs" / f"haste-{job.id}" / "state" / "exit.json"
    deadline = time.monotonic() + 15
    while not exit_file.exists():
        assert time.monotonic() < deadline, "the workload did not end"
        time.sleep(0.05)
    runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=runtime.store.get(job.id).poll_seq))
    stuck = runtime.store.get(job.id)
    assert stuck.state is JobState.RUNNING  # within its deadline, the poll chain tries again
    why = "the workload ended (succeeded), but its files are not in storage yet: uploading outputs failed: "
    assert stuck.history[-1].message.startswith(f"status check failed, will retry: {why}")

    clock.advance(runtime.settings.pipeline.run_deadline_s + 1)
    assert runtime.reconcile.run().expired == [job.id]
    failed = runtime.store.get(job.id)
    assert failed.state is JobState.FAILED
    limit = runtime.settings.pipeline.run_deadline_s
    assert failed.reason is not None
    said = f"the last attempt failed: status check failed, will retry: {why}"
    assert failed.reason.startswith(f"did not finish before its deadline ({limit}s); {said}")
    assert "ContainerNotFound" in failed.reason


def failing_submits(runtime: Runtime, failures: int) -> list[str]:
    """Make the provider's submit fail transiently ``failures`` times, then work; returns the calls' job ids."""
    original = runtime.deps.service.submit
    calls: list[str] = []

    def submit(backend: str, spec: ComputeJobSpec) -> ComputeJobHandle:
        calls.append(spec.job_id)
        if len(calls) <= failures:
            raise TransientBackendError("ServerBusy: try again later", backend=backend)
        return original(backend, spec)

    runtime.deps.service.submit = submit  # type: ignore[method-assign]
    return calls


def test_a_job_stuck_on_a_failing_submit_says_why_at_its_deadline(clocked: tuple[Runtime, Clock]) -> None:
    runtime, clock = clocked
    failing_submits(runtime, failures=10)
    job = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    with pytest.raises(TransientBackendError):
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    clock.advance(runtime.settings.pipeline.queued_deadline_s + 1)
    assert runtime.reconcile.run().expired == [job.id]
    limit = runtime.settings.pipeline.queued_deadline_s
    assert runtime.store.get(job.id).reason == (
        f"was not submitted before its deadline ({limit}s); the last attempt failed: ServerBusy: try again later"
    )


def test_a_deadline_reason_does_not_quote_an_error_the_job_got_past(clocked: tuple[Runtime, Clock]) -> None:
    runtime, clock = clocked
    failing_submits(runtime, failures=1)
    job = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    message = JobMessage(job_id=job.id, kind="submit")
    with pytest.raises(TransientBackendError):
        runtime.submit.handle(message)
    assert runtime.store.get(job.id).last_error == "ServerBusy: try again later"
    runtime.submit.handle(message)  # the redelivery works
    assert runtime.store.get(job.id).last_error is None
    clock.advance(runtime.settings.pipeline.run_deadline_s + 1)
    assert runtime.reconcile.run().expired == [job.id]
    limit = runtime.settings.pipeline.run_deadline_s
    assert runtime.store.get(job.id).reason == f"did not finish before its deadline ({limit}s)"


def test_a_status_check_that_works_again_clears_the_retried_error(clocked: tuple[Runtime, Clock]) -> None:
    runtime, _ = clocked
    job = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    original = runtime.deps.service.status
    failures = [TransientBackendError("ServerBusy: the status is not readable now", backend="local")]

    def status(handle: ComputeJobHandle) -> ComputeStatus:
        if failures:
            raise failures.pop()
        return original(handle)

    runtime.deps.service.status = status  # type: ignore[method-assign]
    poll = JobMessage(job_id=job.id, kind="nudge")
    runtime.poll.handle(poll)
    assert (
        runtime.store.get(job.id).last_error
        == "status check failed, will retry: ServerBusy: the status is not readable now"
    )
    runtime.poll.handle(poll)
    recovered = runtime.store.get(job.id)
    assert (recovered.state, recovered.last_error) == (JobState.RUNNING, None)
    assert recovered.handle is not None
    runtime.deps.service.cancel(recovered.handle)


def test_a_provider_job_whose_record_ended_is_cancelled(clocked: tuple[Runtime, Clock], tmp_path: Path) -> None:
    runtime, _ = clocked
    job = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    runtime.journal.update(job.id, lambda j: j.model_copy(update={"state": JobState.FAILED}))  # e.g. failed elsewhere
    assert job.id in runtime.reconcile.run().orphans_cancelled
    exit_file = tmp_path / "local" / "jobs" / f"haste-{job.id}" / "state" / "exit.json"
    deadline = time.monotonic() + 15
    while not exit_file.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert job.id not in runtime.reconcile.run().orphans_cancelled


def test_a_lost_poll_chain_is_rearmed_and_duplicates_die(clocked: tuple[Runtime, Clock]) -> None:
    runtime, clock = clocked
    drain(runtime)
    job = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    drain(runtime)  # the chain's message is lost
    assert runtime.reconcile.run().rearmed == []  # not yet overdue: it may still come
    clock.advance(runtime.settings.pipeline.poll_initial_s + CHAIN_GRACE_S + 1)
    assert runtime.reconcile.run().rearmed == [job.id]
    seq = runtime.store.get(job.id).poll_seq
    assert JobMessage(job_id=job.id, kind="poll", poll_seq=seq) in queued_messages(runtime, POLL_QUEUE)
    assert drive(runtime, job.id).state is JobState.SUCCEEDED


def test_a_live_poll_chain_costs_the_sweep_no_message(make_runtime: RuntimeFactory) -> None:
    """Sweeps leave a chain alone while its message is due or just overdue; each poll moves the due time on."""
    clock = Clock()
    runtime = development_runtime(load_settings({**_env(make_runtime), "HASTE_POLL_INITIAL_S": "40"}), clock=clock)
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    drain(runtime)
    job = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    bound = runtime.store.get(job.id)
    assert bound.poll_due_at == clock.now + timedelta(seconds=40)  # stored, and read back as written
    assert "pollDueAt" not in bound.api_view()  # bookkeeping, never shown
    poll_messages = queued_count(runtime, POLL_QUEUE)
    for _ in range(5):  # a sweep a minute, past the due time and up to the grace
        clock.advance((40 + CHAIN_GRACE_S) / 5)
        assert runtime.reconcile.run().rearmed == []
    runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=bound.poll_seq))  # the chain polls
    polled = runtime.store.get(job.id)
    assert polled.poll_seq == bound.poll_seq + 1
    assert polled.poll_due_at == clock.now + timedelta(seconds=runtime.deps.chain.delay(polled.poll_seq))
    clock.advance(CHAIN_GRACE_S)
    assert runtime.reconcile.run().rearmed == []
    assert queued_count(runtime, POLL_QUEUE) == poll_messages + 1  # the chain's next message, no other
    clock.advance(runtime.deps.chain.delay(polled.poll_seq) + 1)  # now overdue past the grace: taken for lost
    assert runtime.reconcile.run().rearmed == [job.id]
    assert runtime.reconcile.run().rearmed == [job.id]  # until a poll moves the chain on
    runtime.cancel.cancel(job.id)


def test_provider_queue_wait_is_bounded(make_runtime: RuntimeFactory) -> None:
    """A job the provider never starts (no free slot here) fails once it waited longer than its backend's limit."""
    clock = Clock()
    runtime = development_runtime(
        load_settings({**_env(make_runtime), "HASTE_LOCAL_SLOTS": "1", "HASTE_LOCAL_QUEUE_LIMIT_S": "60"}), clock=clock
    )
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    blocker = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    waiting = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    for job in (blocker, waiting):
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    clock.advance(61)
    runtime.poll.handle(JobMessage(job_id=waiting.id, kind="nudge"))
    failed = runtime.store.get(waiting.id)
    assert failed.state is JobState.FAILED
    assert (
        failed.reason == "waiting for compute on local for 61 s: the 1 local slot is busy (over the 60 s queue limit)"
    )
    assert failed.history[-1].message == f"failed: {failed.reason}"
    runtime.cancel.cancel(blocker.id)


def _env(make_runtime: RuntimeFactory) -> dict[str, str]:
    settings = make_runtime().settings
    return {
        "AzureWebJobsStorage": settings.storage.connection_string or "",
        "HASTE_JOBS_CONTAINER": settings.storage.jobs_container,
        "HASTE_OUTPUTS_CONTAINER": settings.storage.outputs_container,
        "HASTE_INPUTS_CONTAINER": settings.storage.inputs_container,
        "HASTE_LOCAL_ROOT": settings.section(LocalSettings).root + "-slots",
    }


class RefusingBackend(LocalBackend):
    """A real local backend whose listing is refused while ``refusing`` is set, like a 403 from a provider."""

    name: ClassVar[str] = "refusing"
    refusing = True

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        if self.refusing:
            raise TerminalBackendError(
                "listing jobs: AuthorizationFailure: This request is not authorized to perform this operation.",
                backend=self.name,
            )
        return super().list_active()


def test_a_backend_that_cannot_list_costs_only_its_own_sweep_and_is_logged_once_per_change(
    clocked: tuple[Runtime, Clock], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, clock = clocked
    context = BackendContext(settings=runtime.settings.backend("local"), blob_service=runtime.blobs, clock=clock)
    registry = BackendRegistry(
        [
            BackendDescriptor("refusing", lambda ctx: RefusingBackend(ctx, tmp_path / "refusing", 1, sys.executable)),
            BackendDescriptor("local", create_local),
        ],
        enabled=["refusing", "local"],
        contexts={"refusing": context, "local": context},
    )
    refusing = registry.get("refusing")  # built first, so it is listed first
    assert isinstance(refusing, RefusingBackend)
    registry.get("local")  # the same folder as the runtime's own local backend
    step = ReconcileStep(dataclasses.replace(runtime.deps, service=ExecutionService(registry, runtime.blobs)))

    orphan = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    runtime.submit.handle(JobMessage(job_id=orphan.id, kind="submit"))
    runtime.journal.update(orphan.id, lambda j: j.model_copy(update={"state": JobState.FAILED}))
    late = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    clock.advance(runtime.settings.pipeline.queued_deadline_s + 1)
    caplog.set_level(logging.INFO, logger="hastegeo.pipeline.reconcile")

    report = step.run()
    assert report.orphans_cancelled == [orphan.id]  # the other backend's sweep still ran
    assert report.expired == [late.id]  # and so did the deadlines
    assert list(report.unreachable) == ["refusing"]
    for _ in range(3):  # the outage goes on: no new line
        assert "refusing" in step.run().unreachable
    refusing.refusing = False
    assert step.run().unreachable == {}
    step.run()

    lines = [(r.levelname, r.getMessage()) for r in caplog.records if "backend refusing" in r.getMessage()]
    assert lines == [
        (
            "WARNING",
            "reconcile: cannot list the active jobs of backend refusing (listing jobs: AuthorizationFailure: "
            "This request is not authorized to perform this operation.); the rest of the sweep goes on, "
            "and this is tried every run",
        ),
        ("INFO", "reconcile: can list the active jobs of backend refusing again"),
    ]
    assert all(r.exc_info is None for r in caplog.records)  # readable lines, no tracebacks


def test_a_job_whose_staging_failed_is_ended_and_never_orphan_cancelled(clocked: tuple[Runtime, Clock]) -> None:
    runtime, _ = clocked
    job = runtime.acceptor.accept(parse_request(request(inputs=[{"blob": "p1/not-there.txt"}]))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    failed = runtime.store.get(job.id)
    assert failed.state is JobState.FAILED
    assert failed.reason is not None
    assert failed.reason.startswith("an input is missing")
    for _ in range(2):
        assert runtime.reconcile.run().orphans_cancelled == []
    assert job.id not in {ours for ours, _ in runtime.deps.service.list_active()}
