"""Uploading a job's files (:func:`hastegeo.compute.transfer.upload`) on Azurite: several at once, each waited for."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ServiceRequestError
from azure.storage.blob import BlobServiceClient, ContainerClient

from hastegeo.compute import transfer
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite


def container(azurite: Azurite, unique: str) -> ContainerClient:
    client = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client(f"up{unique}")
    client.create_container()
    return client


def files(folder: Path, count: int) -> list[tuple[Path, str]]:
    made = []
    for i in range(count):
        (folder / f"f{i}").write_bytes(f"file {i}".encode() * 100)
        made.append((folder / f"f{i}", f"outputs/f{i}"))
    return made


class Overlapping:
    """Counts the uploads in flight at once, each held a moment so their round trips overlap."""

    def __init__(self, container: ContainerClient, fail: str | None = None) -> None:
        self._container, self._fail = container, fail
        self._lock = threading.Lock()
        self.now = self.most = 0

    def upload_blob(self, name: str, data: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            threading.Event().wait(0.05)
            if name == self._fail:
                raise ServiceRequestError("storage went away")
            return self._container.upload_blob(name, data, **kwargs)
        finally:
            with self._lock:
                self.now -= 1


def test_a_jobs_files_are_uploaded_a_few_at_once_and_every_one_is_stored(
    azurite: Azurite, unique: str, tmp_path: Path
) -> None:
    target = container(azurite, unique)
    counting = Overlapping(target)
    transfer.upload(counting, files(tmp_path, 7))  # type: ignore[arg-type]
    assert counting.most == transfer.UPLOADS_AT_ONCE
    stored = {blob.name: target.download_blob(blob.name).readall() for blob in target.list_blobs()}
    assert stored == {f"outputs/f{i}": f"file {i}".encode() * 100 for i in range(7)}


def test_one_failed_upload_fails_the_whole_upload_after_the_others_ended(
    azurite: Azurite, unique: str, tmp_path: Path
) -> None:
    target = container(azurite, unique)
    counting = Overlapping(target, fail="outputs/f1")
    with pytest.raises(ServiceRequestError):
        transfer.upload(counting, files(tmp_path, 5))  # type: ignore[arg-type]
    assert counting.now == 0  # none still in flight when the caller hears of the failure
    assert {blob.name for blob in target.list_blobs()} == {f"outputs/f{i}" for i in (0, 2, 3, 4)}
