"""A Batch job's cost to the cent: the real BatchClient against the Batch test service (pool shape, runs)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from hastegeo.costs.attribution import Basis
from hastegeo.costs.prices import Priority, shipped_table
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.integration.conftest import drive, put_input, request
from tests.support.processors import ScriptProcessor
from tests.support.runtime import development_runtime
from tests.support.storage import isolated_storage

pytestmark = pytest.mark.azurite
REGION = "westeurope"


def batch_env(azurite: Azurite, unique: str, service: BatchTestService, **extra: str) -> dict[str, str]:
    """The pipeline on the Batch test service, priced in :data:`REGION`, in containers of its own."""
    return {
        **isolated_storage(azurite.connection_string, unique),
        "HASTE_BACKENDS_ENABLED": "azure_batch",
        **service.settings(("artifacts",)),
        "BATCH_POOLS": "artifacts=cpu-pool",
        "BATCH_REGION": REGION,
        **extra,
    }


@pytest.fixture
def batch(azurite: Azurite, unique: str) -> Iterator[tuple[Runtime, BatchTestService]]:
    service = BatchTestService(azurite.connection_string).start()
    env = batch_env(azurite, unique, service)
    runtime = development_runtime(load_settings(env), sleep=lambda _: None)
    put_input(runtime, "p1/a.txt", b"alpha")
    yield runtime, service
    for adapter in runtime.registry.built().values():
        adapter.close()
    service.stop()


def run(runtime: Runtime) -> Job:
    job = runtime.acceptor.accept(parse_request(request(backend="azure_batch"))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    ended = drive(runtime, job.id, timeout=60)
    assert ended.state is JobState.SUCCEEDED, ended.reason
    return ended


def expected(job: Job, vm_size: str, priority: Priority, share: Decimal) -> Decimal:
    """Run time × the table's price × the task's share of its node, summed over the job's runs."""
    assert job.usage is not None
    price = shipped_table().lookup(REGION, vm_size, priority).per_hour
    assert price is not None
    return sum((run.attempt.seconds() * price * share / 3600 for run in job.usage.runs), Decimal(0))


def test_a_batch_task_costs_its_share_of_a_spot_node(batch: tuple[Runtime, BatchTestService]) -> None:
    runtime, service = batch
    service.shape_pool("cpu-pool", vm_size="standard_d4s_v3", slots_per_node=4, low_priority=True)
    job = run(runtime)
    assert job.cost is not None
    assert job.cost.amount is not None, job.cost
    assert job.cost.amount == expected(job, "Standard_D4s_v3", Priority.SPOT, Decimal(1) / 4)
    [attempt] = job.cost.attempts
    assert (attempt.basis, attempt.priority, attempt.region) == (Basis.ATTRIBUTED, Priority.SPOT, REGION)
    assert attempt.unit_price == Decimal("0.048")
    assert job.cost.attributed


def test_a_task_preempted_once_is_billed_for_both_runs(batch: tuple[Runtime, BatchTestService]) -> None:
    runtime, service = batch
    service.faults.preempt(1, after_s=1.5)  # long enough for a poll to see the first run
    job = run(runtime)
    assert any("preemption" in event.message for event in job.history)
    assert job.usage is not None
    assert len(job.usage.runs) == 2, job.usage
    assert job.cost is not None
    assert len(job.cost.attempts) == 2
    first, second = (run.attempt for run in job.usage.runs)
    assert first.ended_at <= second.started_at
    assert first.seconds() > 0
    assert job.cost.amount == expected(job, "Standard_D2s_v3", Priority.DEDICATED, Decimal(1))


def test_an_unknown_vm_size_gives_no_amount_and_says_why(batch: tuple[Runtime, BatchTestService]) -> None:
    runtime, service = batch
    service.shape_pool("cpu-pool", vm_size="standard_hb120rs_v3")
    job = run(runtime)
    assert job.cost is not None
    assert job.cost.amount is None
    assert "standard_hb120rs_v3" in (job.cost.reason or "").lower(), job.cost.reason
    assert job.api_view()["cost"]["amount"] is None


def test_an_auto_job_that_failed_over_sums_both_backends(azurite: Azurite, unique: str, tmp_path: Path) -> None:
    """It ran on Batch until its node was preempted, found no node again and moved to the local backend."""
    service = BatchTestService(azurite.connection_string).start()
    env = batch_env(
        azurite,
        unique,
        service,
        HASTE_BACKENDS_ENABLED="azure_batch,local",
        HASTE_BACKEND_WEIGHTS="azure_batch=1000000,local=0.000001",  # Batch first
        HASTE_AZURE_BATCH_QUEUE_LIMIT_S="1",
        HASTE_LOCAL_ROOT=str(tmp_path / "local"),
        HASTE_LOCAL_PRICE_PER_SLOT_HOUR="36",
    )
    runtime = development_runtime(load_settings(env), sleep=lambda _: None)
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    try:
        service.faults.preempt(1, after_s=1.0)
        body = {"workload": "artifacts", "projectId": "p1", "backend": "auto", "parameters": {"sleep": 2}}
        job = runtime.acceptor.accept(parse_request(body)).job
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
        deadline = time.monotonic() + 30
        while not (seen := runtime.store.get(job.id)).usage and time.monotonic() < deadline:
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=seen.poll_seq))
        service.faults.refuse_capacity("cpu-pool", "AccountCoreQuotaReached", "The account has reached its quota.")
        while (current := runtime.store.get(job.id)).state is not JobState.QUEUED or current.handle is not None:
            assert time.monotonic() < deadline, current.history
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=current.poll_seq))
            time.sleep(0.05)
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
        ended = drive(runtime, job.id, timeout=60)
        assert ended.state is JobState.SUCCEEDED, ended.reason
        assert ended.backends_left == ["azure_batch"]
        assert ended.usage is not None
        assert [run.attempt.backend for run in ended.usage.runs] == ["azure_batch", "local"]
        batch_run, local_run = (run.attempt for run in ended.usage.runs)
        price = shipped_table().lookup(REGION, "Standard_D2s_v3", Priority.DEDICATED).per_hour
        assert price is not None
        assert ended.cost is not None
        assert ended.cost.amount == batch_run.seconds() * price / 3600 + local_run.seconds() * 36 / 3600
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()
        service.stop()


@pytest.mark.parametrize("spot", [True, False], ids=["spot-node", "dedicated-node"])
def test_a_task_in_a_pool_of_both_kinds_is_priced_as_its_node(
    batch: tuple[Runtime, BatchTestService], spot: bool
) -> None:
    runtime, service = batch
    service.shape_pool("cpu-pool", vm_size="standard_d4s_v3", slots_per_node=2, mixed=True)
    if spot:
        service.spot_nodes.add("tvm-0001")  # the first node the service gives a task
    job = run(runtime)
    priority = Priority.SPOT if spot else Priority.DEDICATED
    assert job.cost is not None
    assert job.cost.amount is not None, job.cost  # before: a mixed pool said nothing, and the cost was unknown
    assert job.cost.amount == expected(job, "Standard_D4s_v3", priority, Decimal(1) / 2)
    assert {attempt.priority for attempt in job.cost.attempts} == {priority}
    assert service.calls("")["get_node"] >= 1  # requests that name no job are counted under ""
