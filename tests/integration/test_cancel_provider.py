"""Cancel at the provider, warn if it fails (docs/adr/0030): the step goes on, and the one named retries it."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.store.queues import JobMessage
from hastegeo.utils.errors import TransientBackendError
from tests.conftest import RuntimeFactory
from tests.support.processors import ScriptProcessor

from .conftest import drive, request

pytestmark = pytest.mark.azurite


def running(make_runtime: RuntimeFactory) -> tuple[Runtime, str]:
    """A runtime and a job of it whose workload runs for a while, on the real local backend."""
    runtime = make_runtime()
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    job = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    assert runtime.store.get(job.id).state is JobState.RUNNING
    return runtime, job.id


def refusing(runtime: Runtime, error: BaseException) -> Callable[[], None]:
    """Make the local backend's cancel fail with ``error``; returns what puts it back."""
    backend = runtime.registry.get("local")
    cancel = backend.cancel

    def refused(handle: ComputeJobHandle) -> None:
        raise error

    backend.cancel = refused  # type: ignore[method-assign]
    return lambda: setattr(backend, "cancel", cancel)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "cancel of" in r.getMessage()]


def test_a_refused_cancel_is_stored_and_the_poll_step_tries_again(
    make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, job_id = running(make_runtime)
    restore = refusing(runtime, TransientBackendError("ServerBusy: try again", backend="local"))
    job = runtime.api.cancel.cancel(job_id)  # answers, though the provider refused
    assert job.state is JobState.CANCEL_REQUESTED
    assert warnings(caplog) == [f"cancel of {job_id} on local failed, the poll step tries again: ServerBusy: try again"]
    restore()
    assert drive(runtime, job_id).state is JobState.CANCELLED  # the poll step's cancel took


def test_any_failure_of_a_cancel_after_poison_is_contained_and_the_orphan_sweep_stops_it(
    make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, job_id = running(make_runtime)
    restore = refusing(runtime, RuntimeError("the connection pool is closed"))
    runtime.poison.handle(JobMessage(job_id=job_id, kind="poll").model_dump_json(), "jobs-poll")
    assert runtime.store.get(job_id).state is JobState.FAILED
    assert warnings(caplog) == [
        f"cancel of {job_id} on local failed, the reconciler's orphan sweep tries again: "
        "RuntimeError: the connection pool is closed"
    ]
    assert job_id in {ours for ours, _ in runtime.deps.service.list_active()}  # still running at the provider
    restore()
    assert runtime.reconcile.run().orphans_cancelled == [job_id]
