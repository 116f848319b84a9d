"""``haste sample-data``: a synthetic scene in the inputs container, for trying the workloads on real rasters."""

from __future__ import annotations

from pathlib import Path

SCENE_SIZE = 512


def upload_sample_scene(
    connection_string: str, folder: Path, prefix: str, size: int = SCENE_SIZE, container: str = "haste-inputs"
) -> list[str]:
    """Generate the synthetic scene in ``folder`` and upload it to ``container``. Returns the blob names."""
    from azure.storage.blob import BlobServiceClient

    from hastegeo.workloads._run.sample_data import generate  # geospatial imports only when asked for

    scene = generate(folder, size=size, seed=0)
    inputs = BlobServiceClient.from_connection_string(connection_string).get_container_client(container)
    names = []
    for path in (*scene.rasters, scene.labels, scene.buildings):
        name = f"{prefix}/{path.name}"
        with path.open("rb") as data:
            inputs.upload_blob(name, data, overwrite=True)
        names.append(name)
    return names
