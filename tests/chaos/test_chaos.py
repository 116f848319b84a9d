"""Faults while jobs run: duplicate and shuffled deliveries, a killed host, a storage outage,
a provider outage. Every job must end, run once, and keep a truthful, clean history."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from azure.core.exceptions import AzureError
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.stack import LocalStack
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.support.runtime import development_runtime

from . import ground_truth
from .checks import assert_clean, assert_costs_counted_once, check_jobs
from .conftest import CHAOS_JOBS, Outcome
from .delivery import twice_shuffled
from .ground_truth import Scene, starts_env

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
TERMINAL = {"succeeded", "failed", "cancelled"}
# A scenario fails when no job has ended for this long (stuck), not when a busy machine makes 100 jobs slow;
# CAP_S still bounds it.
STALL_S = 120.0
CAP_S = 1800.0


@pytest.fixture(scope="module")
def own_azurite() -> Iterator[Azurite]:
    """Chaos tests consume whole queues, so they get an Azurite of their own."""
    with Azurite(in_memory=True) as emulator:
        yield emulator


def wait_terminal(client: ApiClient, ids: list[str], stall: float = STALL_S) -> list[dict[str, Any]]:
    """Every job's final view, waiting while jobs keep ending: it fails once none has ended for ``stall``
    seconds (a stuck job, not a slow machine), and in any case after :data:`CAP_S`."""
    started = last = time.monotonic()
    finals: dict[str, dict[str, Any]] = {}
    while len(finals) < len(ids):
        now = time.monotonic()
        if now - last > stall or now - started > CAP_S:
            stuck = {i: client.get(i)["state"] for i in ids if i not in finals}
            raise AssertionError(f"{len(stuck)} job(s) not terminal, none ended for {now - last:.0f}s: {stuck}")
        for job_id in ids:
            if job_id not in finals:
                try:
                    job = client.get(job_id)
                except (OSError, AzureError):
                    continue  # the host may be down for a moment
                if job["state"] in TERMINAL:
                    finals[job_id] = job
                    last = time.monotonic()
        time.sleep(0.3)
    return [finals[i] for i in ids]


def api_view(runtime: Runtime, job_id: str) -> dict[str, Any]:
    return runtime.store.get(job_id).api_view()


# -- 1. every message delivered twice, shuffled, concurrently ---------------------------------


def test_every_message_delivered_twice_and_out_of_order(
    own_azurite: Azurite, tmp_path: Path, outcome: Outcome, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in starts_env(tmp_path / "starts").items():  # the workloads inherit this process's environment
        monkeypatch.setenv(name, value)
    env = {
        "AzureWebJobsStorage": own_azurite.connection_string,
        "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
        "HASTE_LOCAL_SLOTS": "4",
        "HASTE_POLL_INITIAL_S": "1",
        "HASTE_POLL_MAX_S": "1",
        "HASTE_LOCAL_PRICE_PER_SLOT_HOUR": "36",  # a cent a second: totals to check
    }
    runtime = development_runtime(load_settings(env))
    for queue in (SUBMIT_QUEUE, POLL_QUEUE):
        runtime.queues.client(queue).clear_messages()
    runtime.blobs.get_container_client("haste-inputs").upload_blob("p1/a.txt", b"alpha", overwrite=True)
    body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
    ids = [runtime.acceptor.accept(parse_request(body)).job.id for _ in range(CHAOS_JOBS)]
    with twice_shuffled(runtime, seed=20261130) as delivery:
        delivery.until_ended(ids, timeout_s=120)
        check_jobs(outcome, [api_view(runtime, i) for i in ids], tmp_path / "local")
        # The messages still due (duplicates the doubled deliveries sent) go through the same rounds.
        ground_truth.check(outcome, delivery_scene(runtime, own_azurite, tmp_path, delivery.round))
        assert_costs_counted_once(runtime, ids)
    for adapter in runtime.registry.built().values():
        adapter.close()
    assert outcome.succeeded == len(ids), outcome.notes
    assert_clean(outcome)
    ground_truth.assert_true(outcome)


def delivery_scene(
    runtime: Runtime, azurite: Azurite, tmp_path: Path, drain: Callable[[], None], batch: Any | None = None
) -> Scene:
    """Where the truth lives when the test delivers the messages itself (``drain`` delivers what is due)."""
    return Scene(
        runtime.blobs,
        runtime.settings.storage.jobs_container,
        queues=QueueServiceClient.from_connection_string(azurite.connection_string),
        local_root=tmp_path / "local",
        starts_dir=tmp_path / "starts",
        batch=batch,
        drain=drain,
    )


def stack_scene(stack: LocalStack, tmp_path: Path) -> Scene:
    """Where a local stack's truth lives (its host keeps draining the queues while the checks wait)."""
    connection = stack.azurite.connection_string
    return Scene(
        BlobServiceClient.from_connection_string(connection),
        load_settings(stack.env).storage.jobs_container,
        queues=QueueServiceClient.from_connection_string(connection),
        local_root=tmp_path / "local",
        starts_dir=tmp_path / "starts",
    )


# -- 2. the host killed at random moments ----------------------------------------------------


def test_host_killed_at_random_moments(tmp_path: Path, outcome: Outcome) -> None:
    settings = {"HASTE_LOCAL_SLOTS": "2", "HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2"}
    settings.update(starts_env(tmp_path / "starts"))
    with LocalStack(tmp_path, settings=settings, lease_seconds=2) as stack:
        blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
        blobs.get_container_client("haste-inputs").upload_blob("p1/a.bin", random.Random(1).randbytes(4 << 20))
        client = ApiClient(stack.base_url)
        body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.bin"}]}
        ids = [client.submit(body, idempotency_key=f"kill-{i}")["id"] for i in range(CHAOS_JOBS)]
        rng = random.Random(7)
        for _ in range(3):
            time.sleep(rng.uniform(0.2, 1.5))
            assert stack.host is not None
            stack.host.kill()
            stack.start_host()
            client = ApiClient(stack.base_url)
        finals = wait_terminal(client, ids)
        ground_truth.check(outcome, stack_scene(stack, tmp_path))
    check_jobs(outcome, finals, tmp_path / "local")
    assert outcome.succeeded == len(ids), outcome.notes
    assert_clean(outcome)
    ground_truth.assert_true(outcome)


# -- 3. storage stopped and restarted mid-run -------------------------------------------------


def test_storage_outage_mid_run(tmp_path: Path, outcome: Outcome) -> None:
    settings = {"HASTE_LOCAL_SLOTS": "2", "HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2"}
    settings.update(starts_env(tmp_path / "starts"))
    with LocalStack(tmp_path, settings=settings, lease_seconds=3, in_memory=False) as stack:
        blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
        blobs.get_container_client("haste-inputs").upload_blob("p1/a.bin", random.Random(2).randbytes(2 << 20))
        client = ApiClient(stack.base_url)
        body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.bin"}]}
        ids = [client.submit(body, idempotency_key=f"outage-{i}")["id"] for i in range(CHAOS_JOBS)]
        time.sleep(0.5)
        blob_port = urlparse(stack.azurite.blob_url).port or 0
        queue_port = urlparse(stack.azurite.queue_url).port or 0
        stack.azurite.stop()
        time.sleep(3)  # longer than a lease: in-flight messages and nudges fail meanwhile
        stack.azurite.start(blob_port=blob_port, queue_port=queue_port)
        finals = wait_terminal(client, ids)
        ground_truth.check(outcome, stack_scene(stack, tmp_path))
        log = (tmp_path / "host.log").read_text()
    check_jobs(outcome, finals, tmp_path / "local")
    outcome.notes.append(f"{log.count('storage unavailable')} outage warnings in the host log")
    assert outcome.succeeded == len(ids), outcome.notes
    assert "storage unavailable" in log  # the host noticed, said so once per poller, and recovered
    assert_clean(outcome)
    ground_truth.assert_true(outcome)


# -- 4. the provider down for longer than the retry budget ------------------------------------


class Clock:
    def __init__(self) -> None:
        from datetime import UTC, datetime

        self.now = datetime.now(UTC)
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        with self._lock:
            self.now += timedelta(seconds=seconds)


def test_provider_outage_longer_than_the_retry_budget(own_azurite: Azurite, tmp_path: Path, outcome: Outcome) -> None:
    service = BatchTestService(own_azurite.connection_string).start()
    clock = Clock()
    try:
        env = {
            "AzureWebJobsStorage": own_azurite.connection_string,
            "HASTE_JOBS_CONTAINER": "jobs-outage",
            "HASTE_BACKENDS_ENABLED": "azure_batch",
            "HASTE_RUN_DEADLINE_S": "600",
            **service.settings(),
        }
        runtime = development_runtime(load_settings(env), clock=clock, sleep=lambda seconds: None)
        runtime.blobs.get_container_client("haste-inputs").upload_blob("p1/a.txt", b"alpha", overwrite=True)
        body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
        job = runtime.acceptor.accept(parse_request(body)).job
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
        service.faults.fail("get_task", 503, "ServerBusy", times=10_000)
        for _ in range(5):  # five polls, each spending the whole retry budget
            current = runtime.store.get(job.id)
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=current.poll_seq))
            clock.advance(60)
        during = runtime.store.get(job.id)
        assert during.state is JobState.RUNNING  # not failed while within its deadline
        notes = [e.message for e in during.history if "will retry" in e.message]
        assert len(notes) == 1, notes  # said once, not once per poll
        assert notes[0].startswith("status check failed, will retry: reading Batch task")
        assert notes[0].endswith("ServerBusy: ServerBusy (injected)")
        assert during.last_error == notes[0]
        clock.advance(600)
        runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=runtime.store.get(job.id).poll_seq))
        final = runtime.store.get(job.id)
        assert final.state is JobState.FAILED
        # The reason names the deadline and what kept the job from finishing.
        assert final.reason == f"did not finish before its deadline (600s); the last attempt failed: {notes[0]}"
        check_jobs(outcome, [final.api_view()], None)
        # The expired job's Batch job is stopped by the service's own record. Queues: this test plays
        # the host by calling the steps, so the chain's messages stay queued (not checked here).
        ground_truth.check(outcome, Scene(runtime.blobs, "jobs-outage", batch=service))
        assert_clean(outcome)
        ground_truth.assert_true(outcome)
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()
        service.stop()
