"""The Batch test service itself: wire format, signature, paging, staging, and the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from urllib.error import HTTPError

import pytest
from azure.batch import BatchClient  # noqa: TID251 - tests of the Batch double speak Batch
from azure.core.credentials import AzureNamedKeyCredential

from hastegeo.compute.contract import BlobLocation, ComputeState, InputFile
from tests.integration.azure_batch.conftest import Rig

pytestmark = pytest.mark.azurite

READ_INPUTS = (
    "import os, pathlib; w = pathlib.Path(os.environ['HASTE_JOB_WORKDIR']); "
    "names = sorted(p.relative_to(w / 'inputs').as_posix() for p in (w / 'inputs').rglob('*') if p.is_file()); "
    "(w / 'outputs' / 'inputs.txt').write_text(','.join(names)); "
    "(w / 'outputs' / 'scene.txt').write_bytes((w / 'inputs' / 'scene.tif').read_bytes())"
)


def test_inputs_are_staged_with_identity_and_prefixes_land_under_their_destination(rig: Rig) -> None:
    backend = rig.make()
    inputs = rig.blobs.get_container_client(rig.container)
    inputs.upload_blob("in/scene.tif", b"SCENE", overwrite=True)
    inputs.upload_blob("in/tiles/a/1.tif", b"1", overwrite=True)
    inputs.upload_blob("in/tiles/2.tif", b"2", overwrite=True)
    spec = rig.spec(
        "inputs-1",
        READ_INPUTS,
        inputs=(
            InputFile(source=BlobLocation(container=rig.container, path="in/scene.tif"), dest="scene.tif"),
            InputFile(source=BlobLocation(container=rig.container, path="in/tiles"), dest="tiles", is_prefix=True),
        ),
    )
    handle = backend.submit(spec)
    rig.wait(handle)
    assert backend.status(handle).state is ComputeState.SUCCEEDED
    assert rig.blob("p1/inputs-1/outputs/inputs.txt") == b"scene.tif,tiles/2.tif,tiles/a/1.tif"
    assert rig.blob("p1/inputs-1/outputs/scene.txt") == b"SCENE"


def test_a_failing_task_is_retried_up_to_its_budget(rig: Rig) -> None:
    backend = rig.make()
    handle = backend.submit(rig.spec("retry-1", "import sys; sys.exit(4)", retry_budget=2))
    rig.wait(handle)
    status = backend.status(handle)
    assert (status.state, status.exit_code) == (ComputeState.FAILED, 4)
    assert status.detail == "task retried after a failed attempt (retry 2)"


def test_file_listing_pages_by_next_link(rig: Rig) -> None:
    rig.service.page_size = 2
    backend = rig.make()
    handle = backend.submit(rig.spec("list-1"))
    rig.wait(handle)
    client = BatchClient(rig.service.url, AzureNamedKeyCredential(rig.service.account_name, rig.service.account_key))
    with client:
        names = {item.name for item in client.list_task_files("haste-list-1", "haste-list-1", recursive=True)}
    assert {"stdout.txt", "stderr.txt", "wd/outputs/x.txt", "wd/logs/progress.log"} <= names
    assert rig.service.calls("haste-list-1")["list_task_files"] >= 3  # several pages


def test_unsigned_and_badly_signed_requests_are_refused(rig: Rig) -> None:
    with pytest.raises(HTTPError) as raised:
        urllib.request.urlopen(f"{rig.service.url}/jobs/x?api-version=2025-06-01", timeout=5)
    assert raised.value.code == 401
    assert b'"code": "AuthenticationFailed"' in raised.value.read()
    request = urllib.request.Request(
        f"{rig.service.url}/jobs/x?api-version=2025-06-01",
        headers={"Authorization": f"SharedKey {rig.service.account_name}:AAAA"},
    )
    with pytest.raises(HTTPError) as forged:
        urllib.request.urlopen(request, timeout=5)
    assert forged.value.code == 403


def test_runs_as_a_module_and_stops_on_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "hastegeo_dev.testing.batch_service", "--azurite", ""],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "AzureWebJobsStorage": ""},
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("BATCH_ACCOUNT_URL=http://127.0.0.1:")
        url = first.strip().split("=", 1)[1]
        with pytest.raises(HTTPError) as raised:
            urllib.request.urlopen(f"{url}/jobs?api-version=2025-06-01", timeout=5)
        assert raised.value.code == 401
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
