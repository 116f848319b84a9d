"""End to end with backend=azure_batch: the HTTP API, the development host in its own process,
the real BatchClient, and a Batch-compatible service on loopback that runs tasks as processes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo_dev.stack import LocalStack
from hastegeo_dev.testing.batch_service import BatchTestService

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
TERMINAL = {"succeeded", "failed", "cancelled"}
# Batch REST calls for one artifacts job from submit to cleanup, polls included. The poll
# chain backs off (1 s, then 2 s), so a longer job adds few calls; this bounds regressions.
CALL_BUDGET = 40


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalStack, BatchTestService, ApiClient]]:
    """One stack and one Batch-compatible service for the module: each test submits its own job."""
    settings = {"HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2", "HASTE_BACKENDS_ENABLED": "local,azure_batch"}
    stack = LocalStack(tmp_path_factory.mktemp("batch-stack"), settings=settings, lease_seconds=3)
    stack.azurite.start()
    service = BatchTestService(stack.azurite.connection_string).start()
    try:
        settings.update(service.settings())
        stack.start()
        inputs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
        container = inputs.get_container_client("haste-inputs")
        container.upload_blob("p1/a.txt", b"alpha")
        container.upload_blob("p1/not-a-raster.tif", b"this is text, not a GeoTIFF")
        yield stack, service, ApiClient(stack.base_url)
    finally:
        stack.stop()
        service.stop()


@pytest.fixture
def batch(
    running: tuple[LocalStack, BatchTestService, ApiClient],
) -> Iterator[tuple[LocalStack, BatchTestService, ApiClient]]:
    """The module's stack, with no fault left from the test before (a test's faults apply to its own job)."""
    running[1].faults.clear()
    yield running
    running[1].faults.clear()


def finish(client: ApiClient, job_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(job_id)
        if job["state"] in TERMINAL:
            return job
        assert time.monotonic() < deadline, (job["state"], [e["message"] for e in job["history"]])
        time.sleep(0.2)


def artifacts(**fields: Any) -> dict[str, Any]:
    return {
        "workload": "artifacts",
        "projectId": "p1",
        "backend": "azure_batch",
        "inputs": [{"blob": "p1/a.txt"}],
    } | fields


def batch_job_id(job: dict[str, Any]) -> str:
    return str(job["handle"]["providerIds"]["job_id"])


def test_node_gone_after_completion_succeeds_from_blob_with_a_readable_history(
    batch: tuple[LocalStack, BatchTestService, ApiClient],
) -> None:
    _, service, client = batch
    service.faults.node_lost_after_completion(not_ready_calls=100)
    job = finish(client, client.submit(artifacts())["id"])
    assert job["state"] == "succeeded", job.get("reason")
    assert {o["name"] for o in job["outputs"]} == {"outputs/artifacts.zip", "outputs/artifacts_manifest.json"}
    messages = [event["message"] for event in job["history"]]
    assert any(
        "NodeNotReady: Node is not able to perform the requested operations in its current state" in m for m in messages
    ), messages
    text = " ".join(messages)
    for noise in ("RequestId", "Time:20", "HttpResponseError", "ResourceExistsError", "{'", "<azure"):
        assert noise not in text
    assert sum(service.calls(batch_job_id(job)).values()) <= CALL_BUDGET


def test_failed_task_shows_exit_code_and_last_log_line(batch: tuple[LocalStack, BatchTestService, ApiClient]) -> None:
    _, _, client = batch
    request = {"workload": "imagery", "projectId": "p1", "backend": "azure_batch",
               "inputs": [{"blob": "p1/not-a-raster.tif"}]}  # fmt: skip
    job = finish(client, client.submit(request)["id"])
    assert job["state"] == "failed"
    assert "exit code 2" in job["reason"]
    assert "not-a-raster.tif" in job["reason"]


def test_preempted_task_reruns_and_succeeds(batch: tuple[LocalStack, BatchTestService, ApiClient]) -> None:
    _, service, client = batch
    service.faults.preempt(1)
    job = finish(client, client.submit(artifacts())["id"])
    assert job["state"] == "succeeded", job.get("reason")
    assert any("preemption" in event["message"] for event in job["history"])


def test_lost_create_response_binds_to_the_task_that_exists(
    batch: tuple[LocalStack, BatchTestService, ApiClient],
) -> None:
    _, service, client = batch
    service.faults.lose_response("create_task")
    job = finish(client, client.submit(artifacts())["id"])
    assert job["state"] == "succeeded", job.get("reason")
    calls = service.calls(batch_job_id(job))
    assert calls["create_task"] == 2  # the lost answer, then TaskExists
    assert service.task(batch_job_id(job), job["handle"]["providerIds"]["task_id"]).runs == 1
