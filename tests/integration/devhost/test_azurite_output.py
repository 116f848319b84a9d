"""What the Azurite helper keeps of Azurite's output: nothing per request unless asked, and never more than a tail."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo_dev.devhost.azurite import TAIL_LINES, Azurite, AzuriteError
from hastegeo_dev.readiness import StartBound

pytestmark = pytest.mark.azurite


def touch(azurite: Azurite, calls: int) -> None:
    container = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client("probe")
    container.create_container()
    for i in range(calls):
        container.upload_blob(f"b/{i}", b"", overwrite=True)


def test_the_access_log_is_off_by_default_so_requests_never_wait_on_a_reader() -> None:
    with Azurite(in_memory=True) as azurite:
        touch(azurite, 20)
        time.sleep(0.3)
        assert list(azurite.output) == []


def test_an_access_log_asked_for_is_kept_as_a_bounded_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HASTE_AZURITE_ACCESS_LOG", "1")
    with Azurite(in_memory=True) as azurite:
        touch(azurite, TAIL_LINES * 3)
        deadline = time.monotonic() + 10
        while not any(f"b/{TAIL_LINES * 3 - 1}" in line for line in azurite.output):
            assert time.monotonic() < deadline, list(azurite.output)[-3:]
            time.sleep(0.05)
        assert len(azurite.output) == TAIL_LINES


def test_the_same_helper_starts_again_after_a_stop(tmp_path: Path) -> None:
    """The outage tests stop Azurite and start it again on its ports: start-up lines go to the new start."""
    azurite = Azurite(str(tmp_path / "data"), start_bound=StartBound(stall_s=20.0), access_log=True)
    with azurite:
        touch(azurite, 3)
        azurite.stop()
        azurite.start()
        blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
        assert [blob.name for blob in blobs.get_container_client("probe").list_blobs()] == ["b/0", "b/1", "b/2"]


def test_an_azurite_that_keeps_printing_without_listening_is_still_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chatty = tmp_path / "node_modules" / ".bin" / "azurite"
    chatty.parent.mkdir(parents=True)
    chatty.write_text("#!/bin/sh\nwhile :; do echo still starting; sleep 0.05; done\n")
    chatty.chmod(0o755)
    monkeypatch.chdir(tmp_path)  # find_azurite looks here first
    azurite = Azurite(in_memory=True, start_bound=StartBound(stall_s=60.0, cpu_s=60.0, wall_s=2.0))
    with pytest.raises(AzuriteError, match="Azurite did not start: not ready after 2s"):
        azurite.start()
    assert azurite._process is None  # stopped, not left printing
