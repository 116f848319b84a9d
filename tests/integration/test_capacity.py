"""Compute that does not come: the pipeline on the real BatchClient against a Batch test service told to refuse it.

A pool whose last resize hit the core quota and that has no node cannot run anything until an operator acts:
the job is moved on at once, its one history line quoting the pool's own reason. A pool that never grows is
waited for until the backend's queue limit, with the reason in the history meanwhile. A pool that grows in
time runs the job as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.support.clock import Clock
from tests.support.runtime import development_runtime
from tests.support.storage import isolated_storage

from .conftest import drive, put_input, request

pytestmark = pytest.mark.azurite
POOL = "cpu-pool"
QUOTA = "The specified account has reached VM core quota for family standardDSv3Family."


@contextmanager
def running(
    azurite: Azurite, unique: str, clock: Clock | None, **env: str
) -> Iterator[tuple[Runtime, BatchTestService]]:
    """A runtime over the Batch test service (its ``artifacts`` pool is :data:`POOL`) with ``env`` on top."""
    service = BatchTestService(azurite.connection_string).start()
    settings = {
        **isolated_storage(azurite.connection_string, unique),
        **service.settings(("artifacts",)),
        "BATCH_POOLS": f"artifacts={POOL}",
        **env,
    }
    runtime = development_runtime(load_settings(settings), clock=clock or Clock(), sleep=lambda _: None)
    try:
        yield runtime, service
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()
        service.stop()


@pytest.fixture
def batch(azurite: Azurite, unique: str) -> Iterator[tuple[Runtime, BatchTestService, Clock]]:
    clock = Clock()
    limit = {"HASTE_BACKENDS_ENABLED": "azure_batch", "HASTE_AZURE_BATCH_QUEUE_LIMIT_S": "1800"}
    with running(azurite, unique, clock, **limit) as (runtime, service):
        yield runtime, service, clock


def submitted(runtime: Runtime) -> str:
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request(backend="azure_batch"))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    return job.id


def poll(runtime: Runtime, job_id: str) -> None:
    runtime.poll.handle(JobMessage(job_id=job_id, kind="poll", poll_seq=runtime.store.get(job_id).poll_seq))


def test_a_quota_that_cannot_clear_moves_the_job_on_at_once(batch: tuple[Runtime, BatchTestService, Clock]) -> None:
    runtime, service, _ = batch
    service.faults.refuse_capacity(POOL, "AccountCoreQuotaReached", QUOTA)
    job_id = submitted(runtime)
    poll(runtime, job_id)
    job = runtime.store.get(job_id)
    assert job.state is JobState.FAILED
    assert job.reason == (
        f"waiting for compute on azure_batch for 0 s: pool {POOL}: AccountCoreQuotaReached: {QUOTA} "
        "(this cannot clear by itself)"
    )
    assert job.history[-1].message == f"failed: {job.reason}"
    assert job.handle is not None
    provider_job = service.engine.jobs[job.handle.provider_ids["job_id"]]
    assert provider_job.state == "completed"  # cancelled: no provider job is left waiting for a node


def test_a_pool_that_never_grows_is_waited_for_until_the_queue_limit(
    batch: tuple[Runtime, BatchTestService, Clock],
) -> None:
    runtime, service, clock = batch
    service.faults.refuse_capacity(POOL, "AllocationFailed", "Allocation failed: no capacity in the region.")
    job_id = submitted(runtime)
    poll(runtime, job_id)
    waiting = runtime.store.get(job_id)
    assert waiting.state is JobState.RUNNING
    reason = f"pool {POOL}: AllocationFailed: Allocation failed: no capacity in the region."
    assert waiting.history[-1].message == f"waiting for a node: {reason}"
    clock.now += timedelta(seconds=1801)
    poll(runtime, job_id)
    job = runtime.store.get(job_id)
    assert job.state is JobState.FAILED
    assert job.reason == f"waiting for compute on azure_batch for 30 min: {reason} (over the 30 min queue limit)"


def test_a_pool_that_grows_in_time_runs_the_job(batch: tuple[Runtime, BatchTestService, Clock]) -> None:
    runtime, service, _ = batch
    service.faults.refuse_capacity(POOL, target=2)  # allocating, no error yet
    job_id = submitted(runtime)
    poll(runtime, job_id)
    assert (
        runtime.store.get(job_id).history[-1].message == f"waiting for a node: pool {POOL} is allocating nodes (0 of 2)"
    )
    service.faults.grant_capacity(POOL)
    finished = drive(runtime, job_id, timeout=60)
    assert finished.state is JobState.SUCCEEDED, finished.reason


@pytest.fixture
def auto(azurite: Azurite, unique: str, tmp_path: Path) -> Iterator[tuple[Runtime, BatchTestService]]:
    """``auto`` over the Batch test service (ranked first for every job) and the local backend."""
    with running(
        azurite,
        unique,
        None,
        HASTE_BACKENDS_ENABLED="azure_batch,local",
        HASTE_DEFAULT_BACKEND="auto",
        HASTE_BACKEND_WEIGHTS="azure_batch=1000000,local=0.000001",
        HASTE_LOCAL_ROOT=str(tmp_path / "local"),
    ) as parts:
        yield parts


def test_an_auto_job_moves_to_its_next_backend_once_its_provider_job_is_gone(
    auto: tuple[Runtime, BatchTestService],
) -> None:
    runtime, service = auto
    service.faults.refuse_capacity(POOL, "AccountCoreQuotaReached", QUOTA)
    put_input(runtime, "p1/a.txt", b"alpha")
    job_id = runtime.acceptor.accept(parse_request(request())).job.id
    runtime.submit.handle(JobMessage(job_id=job_id, kind="submit"))
    on_batch = runtime.store.get(job_id)
    assert on_batch.backend == "azure_batch"
    assert on_batch.handle is not None
    # The first cancel does not get through: the job stays on Batch, leaving, with one provider job.
    service.faults.fail("terminate_job", 500, "InternalError", times=50)
    poll(runtime, job_id)
    leaving = runtime.store.get(job_id)
    assert leaving.state is JobState.RUNNING
    assert leaving.backend == "azure_batch"
    line = f"waiting for compute on azure_batch for 0 s: pool {POOL}: AccountCoreQuotaReached: {QUOTA}"
    assert f"{line} (this cannot clear by itself); moving to local" in [e.message for e in leaving.history]
    # The next poll (a redelivery, or another host after this one died) cancels again, confirms, moves.
    service.faults.clear()
    service.faults.refuse_capacity(POOL, "AccountCoreQuotaReached", QUOTA)
    stale = JobMessage(job_id=job_id, kind="poll", poll_seq=leaving.poll_seq)
    runtime.poll.handle(stale)
    moved = runtime.store.get(job_id)
    assert moved.state is JobState.QUEUED
    assert moved.backend == "local"
    assert moved.handle is None
    assert moved.waiting_for_compute is None
    assert moved.backends_left == ["azure_batch"]
    assert moved.history[-1].message == "moved from azure_batch to local: its provider job is gone"
    assert service.engine.jobs[on_batch.handle.provider_ids["job_id"]].state == "completed"
    runtime.poll.handle(stale)  # the old chain's message again: dropped
    assert runtime.store.get(job_id).updated_at == moved.updated_at
    runtime.submit.handle(JobMessage(job_id=job_id, kind="submit"))
    finished = drive(runtime, job_id, timeout=60)
    assert finished.state is JobState.SUCCEEDED, finished.reason
    assert finished.handle is not None
    assert finished.handle.backend == "local"
