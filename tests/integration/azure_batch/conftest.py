"""The Batch adapter wired to the Batch test service and the session's Azurite, per test."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.azure_batch.adapter import BatchBackend, create
from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeJobHandle, ComputeJobSpec, ComputeStatus
from hastegeo.settings.load import load_settings
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService

# A trivial workload: writes an output and a progress log into $HASTE_JOB_WORKDIR.
WRITE_OUTPUTS = (
    "import json, os, pathlib; w = pathlib.Path(os.environ['HASTE_JOB_WORKDIR']); "
    "params = json.loads((w / 'params.json').read_text()) if (w / 'params.json').exists() else {}; "
    "(w / 'outputs' / 'x.txt').write_text('hello ' + str(params.get('who', 'world'))); "
    "(w / 'logs' / 'progress.log').write_text('step 1 done\\n'); print('finished')"
)


@dataclass
class Rig:
    service: BatchTestService
    blobs: BlobServiceClient
    container: str
    make: Callable[..., BatchBackend]
    sleeps: list[float] = field(default_factory=list)

    def spec(self, name: str, code: str = WRITE_OUTPUTS, **fields: object) -> ComputeJobSpec:
        values: dict[str, object] = {
            "job_id": name.upper(),
            "name": name,
            "workload": "imagery",
            "entrypoint": ("python", "-c", code),
            "output": BlobLocation(container=self.container, path=f"p1/{name}"),
            "time_limit_s": 60,
        }
        values.update(fields)
        return ComputeJobSpec.model_validate(values)

    def blob(self, name: str) -> bytes:
        return bytes(self.blobs.get_blob_client(self.container, name).download_blob().readall())

    def wait(self, handle: ComputeJobHandle) -> None:
        """Wait on the service side (bounded) so the adapter's call count stays deterministic."""
        self.service.wait_task(handle.provider_ids["job_id"], handle.provider_ids["task_id"], timeout=30)

    def poll(self, backend: BatchBackend, handle: ComputeJobHandle, timeout: float = 30.0) -> ComputeStatus:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = backend.status(handle)
            if status.state.terminal:
                return status
            time.sleep(0.05)
        raise AssertionError(f"{handle.provider_ids} did not end within {timeout}s")


@pytest.fixture
def rig(azurite: Azurite, unique: str) -> Iterator[Rig]:
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    container = f"out-{unique}"
    blobs.create_container(container)
    service = BatchTestService(azurite.connection_string).start()
    built: list[BatchBackend] = []
    sleeps: list[float] = []

    def make(**overrides: str) -> BatchBackend:
        env = {
            "AzureWebJobsStorage": azurite.connection_string,
            "HASTE_BACKENDS_ENABLED": "azure_batch",
            "BATCH_ACCOUNT_URL": service.url,
            "BATCH_AUTH_MODE": "shared_key",
            "BATCH_ACCOUNT_NAME": service.account_name,
            "BATCH_ACCOUNT_KEY": service.account_key,
            "BATCH_POOLS": "imagery=cpu-pool",
            "BATCH_IMAGES": "imagery=haste/imagery:1",
            "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/x",
            "BATCH_RETRY_ATTEMPTS": "4",
            "BATCH_RETRY_BACKOFF_S": "0.5",
            "BATCH_REQUEST_TIMEOUT_S": "10",
            **overrides,
        }
        context = BackendContext(
            settings=load_settings(env).backend("azure_batch"), blob_service=blobs, sleep=sleeps.append
        )
        backend = create(context)
        built.append(backend)
        return backend

    yield Rig(service, blobs, container, make, sleeps)
    for backend in built:
        backend.close()
    service.stop()
    blobs.delete_container(container)
