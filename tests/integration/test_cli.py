"""The `haste` command line against real storage."""

from __future__ import annotations

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.main import main
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite


def test_sample_data_uploads_to_the_configured_inputs_container(
    azurite: Azurite, clean_env: pytest.MonkeyPatch, unique: str, capsys: pytest.CaptureFixture[str]
) -> None:
    container = f"inputs-{unique}"
    BlobServiceClient.from_connection_string(azurite.connection_string).create_container(container)
    clean_env.setenv("AzureWebJobsStorage", azurite.connection_string)
    clean_env.setenv("HASTE_INPUTS_CONTAINER", container)
    assert main(["sample-data", "--prefix", "p1/scene", "--size", "256", "--output", "table"]) == 0
    stored = BlobServiceClient.from_connection_string(azurite.connection_string).get_container_client(container)
    names = sorted(blob.name for blob in stored.list_blobs())
    assert names == [
        "p1/scene/buildings.geojson",
        "p1/scene/labels.geojson",
        "p1/scene/scene_left.tif",
        "p1/scene/scene_right.tif",
    ]
    printed = capsys.readouterr().out.splitlines()
    assert sorted(printed) == [f"{container}/{name}" for name in names]
