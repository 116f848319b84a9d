"""A sixth workload added as one folder (tests/support/sixth_workload) runs end to end, no other file changed.

The folder holds the workload, shaped as every ``hastegeo/workloads/<name>/``, and the
``*.dist-info`` with a ``hastegeo.workloads`` entry point that ``pip install`` would leave.
Put on the stack's ``PYTHONPATH`` (the development host, and the local backend's
processes after it), the workload is in the OpenAPI enum with its parameters, its
parameters are validated by the API, and a job of it is submitted, run on compute as
``python -m haste_tilecount``, post-processed and summarized through the real stack.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient, ApiError
from hastegeo_dev.stack import LocalStack
from tests.e2e.test_stack import SETTINGS, wait_all

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

FOLDER = Path(__file__).resolve().parents[1] / "support" / "sixth_workload"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    path = os.pathsep.join(filter(None, [str(FOLDER), os.environ.get("PYTHONPATH", "")]))
    with LocalStack(tmp_path_factory.mktemp("sixth"), settings={**SETTINGS, "PYTHONPATH": path}) as running:
        inputs = BlobServiceClient.from_connection_string(running.azurite.connection_string)
        container = inputs.get_container_client("haste-inputs")
        container.upload_blob("p1/scene.tif", b"not really a raster")
        container.upload_blob("p1/notes.txt", b"notes")
        yield running


def test_the_sixth_workload_is_listed_with_its_parameters(stack: LocalStack) -> None:
    client = ApiClient(stack.base_url)
    _, document, _ = client.request("GET", "/api/openapi.json")
    schemas = document["components"]["schemas"]
    assert schemas["JobRequest"]["properties"]["workload"]["enum"][-1] == "tilecount"
    assert schemas["TilecountParameters"]["properties"]["suffix"]["maxLength"] == 16
    with pytest.raises(ApiError) as refused:
        client.submit({"workload": "tilecount", "projectId": "p1", "inputs": [{"blob": "p1/notes.txt"}],
                       "parameters": {"suffix": 5}})  # fmt: skip
    assert refused.value.status == 400
    assert "parameters.suffix" in str(refused.value.body)
    with pytest.raises(ApiError) as without_input:
        client.submit({"workload": "tilecount", "projectId": "p1"})
    assert "the tilecount workload needs at least one input" in str(without_input.value.body)


def test_a_job_of_the_sixth_workload_runs_on_the_local_backend_and_is_post_processed(stack: LocalStack) -> None:
    client = ApiClient(stack.base_url)
    inputs = [{"blob": "p1/scene.tif"}, {"blob": "p1/notes.txt"}]
    job = client.submit(
        {"workload": "tilecount", "projectId": "p1", "inputs": inputs, "parameters": {"suffix": ".tif"}}
    )
    final = wait_all(client, [job["id"]], local_root=stack.workdir / "local")[job["id"]]
    assert final["state"] == "succeeded", final.get("reason")
    assert final["backend"] == "local"
    assert final["summary"] == {"files": 1, "bytes": len(b"not really a raster")}
    assert {output["name"] for output in final["outputs"]} == {"outputs/tilecount_manifest.json", "outputs/count.json"}
    messages = [event["message"] for event in final["history"]]
    assert any("counted 1 file(s)" in message for message in messages), messages
    spec = (stack.workdir / "local" / "jobs" / f"haste-{job['id']}" / "spec.json").read_text()
    assert '"-m", "haste_tilecount"' in spec
