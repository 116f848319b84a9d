"""One stack for the fuzz module: Azurite plus an HTTP-only development host, and the schema it serves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from hastegeo.store.queues import GROUPS_QUEUE, SUBMIT_QUEUE
from hastegeo_dev.stack import HostProcess, LocalStack
from tests.support.hosts import HttpOnlyHost

# The caller the host injects into every request that carries no X-MS-CLIENT-PRINCIPAL of its own.
FUZZ_PRINCIPAL = "name=fuzz@localhost;roles=Haste.Admin"
JOBS_CONTAINER = "haste-jobs"


class FuzzStack(LocalStack):
    """:class:`LocalStack` whose host serves HTTP only, so queue counts stay still while they are compared."""

    def start_host(self) -> HostProcess:
        self.host = HttpOnlyHost(self.root, self.env, self.port, self.workdir / "host.log", self.lease_seconds).start()
        return self.host


class Storage:
    """What the API has stored: job documents and messages waiting on ``jobs-submit``; group documents
    (``groups/<id>.json``, ADR 0040) and messages waiting on ``groups-make``."""

    def __init__(self, connection_string: str) -> None:
        self._jobs = BlobServiceClient.from_connection_string(connection_string).get_container_client(JOBS_CONTAINER)
        self._submit = QueueClient.from_connection_string(connection_string, SUBMIT_QUEUE)
        self._groups = QueueClient.from_connection_string(connection_string, GROUPS_QUEUE)

    def job_documents(self) -> int:
        return sum(1 for _ in self._jobs.list_blobs(name_starts_with="jobs/"))

    def submit_messages(self) -> int:
        return int(self._submit.get_queue_properties().approximate_message_count or 0)

    def group_documents(self) -> int:
        # groups/<id>.json, not the request beside it (groups/<id>/request.json)
        return sum(1 for blob in self._jobs.list_blobs(name_starts_with="groups/") if blob.name.count("/") == 1)

    def group_messages(self) -> int:
        return int(self._groups.get_queue_properties().approximate_message_count or 0)

    def counts(self) -> tuple[int, int, int, int]:
        return self.job_documents(), self.submit_messages(), self.group_documents(), self.group_messages()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with FuzzStack(tmp_path_factory.mktemp("fuzz"), settings={"HASTE_DEV_PRINCIPAL": FUZZ_PRINCIPAL}) as running:
        yield running


@pytest.fixture(scope="module")
def api_base_url(stack: LocalStack) -> str:
    return f"{stack.base_url}/api"


@pytest.fixture(scope="module")
def schema(stack: LocalStack, api_base_url: str) -> schemathesis.BaseSchema:
    loaded = schemathesis.openapi.from_url(f"{stack.base_url}/api/openapi.json", timeout=10)
    loaded.config.base_url = api_base_url
    return loaded


@pytest.fixture(scope="module")
def storage(stack: LocalStack) -> Storage:
    return Storage(stack.azurite.connection_string)


@pytest.fixture
def host_log(stack: LocalStack) -> Path:
    return stack.workdir / "host.log"
