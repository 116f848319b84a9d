"""The operator's ``HASTE_CHECKPOINT_INTERVAL_S`` reaches a real local training job: its process copies the checkpoint
folder that often (ADR 0044), and a deployment that leaves it unset copies as before (every 300 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hastegeo.checkpoints.store import CheckpointStore
from hastegeo.workloads._run.sample_data import SampleScene
from hastegeo_dev.devhost.azurite import Azurite

from .conftest import EPOCHS, close, environment, make_runtime, put_scene, trained

pytestmark = pytest.mark.azurite


@pytest.mark.parametrize("interval", ["0.05", None], ids=["short", "unset"])
def test_a_local_job_copies_its_checkpoint_as_often_as_the_operator_set(
    azurite: Azurite, unique: str, tmp_path: Path, scene: SampleScene, interval: str | None
) -> None:
    env = environment(azurite, unique, "local", None)
    if interval is not None:
        env["HASTE_CHECKPOINT_INTERVAL_S"] = interval
    runtime = make_runtime(env, tmp_path)
    try:
        put_scene(runtime, scene)
        job = trained(runtime, scene, "local")
    finally:
        close(runtime)

    outputs = runtime.blobs.get_container_client(runtime.settings.storage.outputs_container)
    latest = CheckpointStore(outputs, f"jobs/{job.id}/checkpoints").latest()
    assert latest is not None
    # Each committed copy takes the next sequence number, so the last one counts the copies the run made.
    if interval is None:
        assert latest.pointer.sequence == 1  # only the copy as the workload ended: 300 s never passed
    else:
        # Epochs take about a quarter of a second and each changes the folder: copies every 0.05 s see most.
        assert 3 <= latest.pointer.sequence <= EPOCHS
