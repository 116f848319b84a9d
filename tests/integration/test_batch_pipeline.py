"""The pipeline on the Azure Batch backend: the real BatchClient against the Batch test service."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.service import ExecutionService
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.finish import FinishStep
from hastegeo.pipeline.poll import PollStep
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import JobMessage
from hastegeo_dev.devhost.azurite import ACCOUNT_KEY, Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.support.runtime import development_runtime
from tests.support.storage import isolated_storage

from .conftest import drive, put_input, request

pytestmark = pytest.mark.azurite


@pytest.fixture
def batch_runtime(azurite: Azurite, unique: str, tmp_path: object) -> Iterator[tuple[Runtime, BatchTestService]]:
    service = BatchTestService(azurite.connection_string).start()
    env = {
        **isolated_storage(azurite.connection_string, unique),
        "HASTE_BACKENDS_ENABLED": "azure_batch",
        "BATCH_ACCOUNT_URL": service.url,
        "BATCH_AUTH_MODE": "shared_key",
        "BATCH_ACCOUNT_NAME": service.account_name,
        "BATCH_ACCOUNT_KEY": service.account_key,
        "BATCH_POOLS": "artifacts=cpu-pool",
        "BATCH_IMAGES": "artifacts=haste/geo:1",
        "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/x",
    }
    sleeps: list[float] = []
    runtime = development_runtime(load_settings(env), sleep=sleeps.append)
    yield runtime, service
    for adapter in runtime.registry.built().values():
        adapter.close()
    service.stop()


def test_node_lost_after_completion_still_succeeds_from_blob(
    batch_runtime: tuple[Runtime, BatchTestService],
) -> None:
    runtime, service = batch_runtime
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request(backend="azure_batch"))).job
    service.faults.node_lost_after_completion(not_ready_calls=50)
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    finished = drive(runtime, job.id, timeout=60)
    assert finished.state is JobState.SUCCEEDED, finished.reason
    assert {o.name for o in finished.outputs} == {"outputs/artifacts.zip", "outputs/artifacts_manifest.json"}
    messages = [event.message for event in finished.history]
    readable = [m for m in messages if "NodeNotReady: Node is not able to perform the requested operations" in m]
    assert readable, messages
    text = "\n".join(messages)
    assert "RequestId" not in text
    assert "HttpResponseError" not in text
    assert "<azure" not in text


NODE_CAUSES = (
    "NodeNotReady: Node is not able to perform the requested operations in its current state; "
    "then NodeNotFound: The specified node does not exist"
)


def with_blob_reader(runtime: Runtime, blobs: BlobServiceClient) -> Runtime:
    """The same runtime, except that post-processing's blob reads (its fallback among them) go through ``blobs``."""
    deps = dataclasses.replace(runtime.deps, service=ExecutionService(runtime.registry, blobs))
    poll = PollStep(deps, FinishStep(deps, runtime.acceptor))
    return dataclasses.replace(runtime, deps=deps, poll=poll)


def test_node_gone_and_blob_read_failing_names_both_causes(
    batch_runtime: tuple[Runtime, BatchTestService], azurite: Azurite
) -> None:
    runtime, service = batch_runtime
    # A storage client whose key the account refuses: every read is a real 403 from Azurite.
    wrong_key = base64.b64encode(b"not the account key".ljust(64, b"!")).decode()
    refused = BlobServiceClient.from_connection_string(azurite.connection_string.replace(ACCOUNT_KEY, wrong_key))
    broken = with_blob_reader(runtime, refused)
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request(backend="azure_batch"))).job
    service.faults.node_lost_after_completion(not_ready_calls=1)
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    finished = drive(broken, job.id, timeout=60)
    assert finished.state is JobState.FAILED
    reason = finished.reason or ""
    assert reason.startswith(
        f"outputs/artifacts_manifest.json could not be read: the compute node could not serve it ({NODE_CAUSES}); "
        "the blob copy could not be read (AuthorizationFailure: Server failed to authenticate the request."
    ), reason
    assert reason.endswith(")")
    assert "\n" not in reason
    for noise in ("RequestId", "Time:", "ErrorCode", "<?xml", "HttpResponseError", "not found"):
        assert noise not in reason, noise
    last = finished.history[-1].message  # the history caps a line's length; the reason is whole
    assert last.startswith("post-processing failed: outputs/artifacts_manifest.json could not be read"), last
    assert "NodeNotFound" in last  # both causes survive the cap
    assert "AuthorizationFailure" in last


def test_node_gone_and_no_blob_copy_says_so_without_hiding_the_node_cause(
    batch_runtime: tuple[Runtime, BatchTestService],
) -> None:
    runtime, service = batch_runtime
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request(backend="azure_batch"))).job
    service.faults.node_lost_after_completion(not_ready_calls=1)
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    handle = runtime.store.get(job.id).handle
    assert handle is not None
    service.wait_task(handle.provider_ids["job_id"], handle.provider_ids["task_id"])
    outputs = runtime.blobs.get_container_client(handle.output.container)
    outputs.delete_blob(handle.output.child("outputs/artifacts_manifest.json"))  # the upload never landed
    finished = drive(runtime, job.id, timeout=60)
    assert finished.state is JobState.FAILED
    assert finished.reason == (
        f"outputs/artifacts_manifest.json could not be read: the compute node could not serve it ({NODE_CAUSES}); "
        "it is not in blob storage"
    )


def test_failed_resource_download_is_one_readable_line(batch_runtime: tuple[Runtime, BatchTestService]) -> None:
    runtime, _ = batch_runtime
    job = runtime.acceptor.accept(parse_request(request(backend="azure_batch"))).job  # input never uploaded
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    finished = drive(runtime, job.id, timeout=60)
    assert finished.state is JobState.FAILED
    assert finished.reason == (
        "BlobDownloadMiscError: A resource file could not be downloaded: "
        "BlobNotFound: The specified blob does not exist."
    )


def test_preempted_task_reruns_and_the_history_says_so(batch_runtime: tuple[Runtime, BatchTestService]) -> None:
    runtime, service = batch_runtime
    put_input(runtime, "p1/a.txt", b"alpha")
    job = runtime.acceptor.accept(parse_request(request(backend="azure_batch"))).job
    service.faults.preempt(1)
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    finished = drive(runtime, job.id, timeout=60)
    assert finished.state is JobState.SUCCEEDED, finished.reason
    assert any("preemption" in event.message for event in finished.history), [e.message for e in finished.history]


def test_reconciler_cancels_a_batch_job_whose_record_ended(batch_runtime: tuple[Runtime, BatchTestService]) -> None:
    from tests.support.processors import ScriptProcessor

    runtime, service = batch_runtime
    runtime.deps.processors["artifacts"] = ScriptProcessor()  # a task that sleeps: still active when we look
    job = runtime.acceptor.accept(
        parse_request(request(backend="azure_batch", inputs=[], parameters={"sleep": 30}))
    ).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    batch_job = runtime.store.get(job.id).handle.provider_ids["job_id"]  # type: ignore[union-attr]
    assert (job.id, batch_job) in {(ours, h.provider_ids["job_id"]) for ours, h in runtime.deps.service.list_active()}
    # The record ends without the provider hearing of it (say, failed by an operator's fix-up).
    runtime.journal.update(job.id, lambda j: j.model_copy(update={"state": JobState.FAILED}))
    report = runtime.reconcile.run()
    assert job.id in report.orphans_cancelled
    assert job.id not in {ours for ours, _ in runtime.deps.service.list_active()}
    assert service.engine.jobs[batch_job].state != "active"
