"""Fail-over under chaos: every message delivered twice, shuffled and concurrently, while the first backend's
compute never comes (a Batch pool at its core quota with no node). Every ``auto`` job must leave Batch once,
with its one Batch job terminated before it moves, run once on the local backend, and succeed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hastegeo.pipeline.accept import parse_request
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.support.runtime import development_runtime

from . import ground_truth
from .checks import assert_clean, assert_costs_counted_once, check_jobs
from .conftest import CHAOS_JOBS, Outcome
from .delivery import twice_shuffled
from .ground_truth import starts_env
from .test_chaos import delivery_scene

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
POOL = "cpu-pool"


@pytest.fixture
def own_azurite() -> Iterator[Azurite]:
    """The scenario consumes whole queues, so it gets an Azurite of its own."""
    with Azurite(in_memory=True) as emulator:
        yield emulator


def test_failover_with_every_message_delivered_twice(
    own_azurite: Azurite, tmp_path: Path, outcome: Outcome, monkeypatch: pytest.MonkeyPatch
) -> None:
    azurite = own_azurite
    for name, value in starts_env(tmp_path / "starts").items():  # the workloads inherit this process's environment
        monkeypatch.setenv(name, value)
    service = BatchTestService(azurite.connection_string).start()
    service.faults.refuse_capacity(POOL, "AccountCoreQuotaReached", "The specified account has reached VM core quota.")
    env = {
        "AzureWebJobsStorage": azurite.connection_string,
        "HASTE_BACKENDS_ENABLED": "azure_batch,local",
        "HASTE_BACKEND_WEIGHTS": "azure_batch=1000000,local=0.000001",  # Batch first for every job
        "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
        "HASTE_LOCAL_SLOTS": "4",
        "HASTE_LOCAL_PRICE_PER_SLOT_HOUR": "36",  # a cent a second: totals to check
        "HASTE_POLL_INITIAL_S": "1",
        "HASTE_POLL_MAX_S": "1",
        **service.settings(("artifacts",)),
        "BATCH_POOLS": f"artifacts={POOL}",
    }
    runtime = development_runtime(load_settings(env), sleep=lambda _: None)
    try:
        for queue in (SUBMIT_QUEUE, POLL_QUEUE):
            runtime.queues.client(queue).clear_messages()
        runtime.blobs.get_container_client("haste-inputs").upload_blob("p1/a.txt", b"alpha", overwrite=True)
        body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
        ids = [runtime.acceptor.accept(parse_request(body)).job.id for _ in range(CHAOS_JOBS)]
        with twice_shuffled(runtime, seed=20261203) as delivery:
            delivery.until_ended(ids, timeout_s=180)
            finals = [runtime.store.get(i) for i in ids]
            check_jobs(outcome, [job.api_view() for job in finals], tmp_path / "local")
            # The messages still due (duplicates the doubled deliveries sent) go through the same rounds.
            ground_truth.check(outcome, delivery_scene(runtime, azurite, tmp_path, delivery.round, batch=service))
            assert_costs_counted_once(runtime, ids)
        assert outcome.succeeded == len(ids), outcome.notes
        assert_clean(outcome)
        for job in finals:
            assert job.backends_left == ["azure_batch"], job.history
            assert job.handle is not None
            assert job.handle.backend == "local"
            moves = [e.message for e in job.history if e.message.startswith("moved from azure_batch to local")]
            assert len(moves) == 1, job.history
        with service.engine.lock:  # one Batch job per job, each terminated before its job moved
            batch_jobs = list(service.engine.jobs.values())
        assert len(batch_jobs) == len(ids)
        assert {job.state for job in batch_jobs} == {"completed"}
        ground_truth.assert_true(outcome)
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()
        service.stop()
