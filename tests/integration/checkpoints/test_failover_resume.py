"""An ``auto`` job that leaves the local backend mid-run goes on from its checkpoint on Batch
(:func:`.conftest.moved_mid_run` says how the move is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hastegeo.workloads._run.sample_data import SampleScene
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService

from .conftest import (
    assert_same_model,
    close,
    environment,
    epoch_log,
    make_runtime,
    model_of,
    moved_mid_run,
    put_scene,
    resumed_at,
    trained,
)

pytestmark = pytest.mark.azurite


def test_auto_job_moved_from_local_to_batch_resumes_where_local_stopped(
    azurite: Azurite, unique: str, tmp_path: Path, scene: SampleScene, batch_service: BatchTestService
) -> None:
    env = environment(azurite, unique, "local,azure_batch", batch_service)
    env["HASTE_BACKEND_WEIGHTS"] = "local=1000000,azure_batch=0.000001"  # auto picks local first, Batch next
    runtime = make_runtime(env, tmp_path)
    try:
        put_scene(runtime, scene)
        whole = trained(runtime, scene, "azure_batch")
        finished = moved_mid_run(runtime, scene, "azure_batch")
    finally:
        close(runtime)

    first = resumed_at(finished)
    assert first >= 3  # local finished two epochs at least, and they were not lost
    # Batch's run trained only the epochs local had not finished, with the losses an uninterrupted run had.
    assert epoch_log(runtime, finished) == epoch_log(runtime, whole)[first - 1 :]
    assert_same_model(model_of(runtime, finished), model_of(runtime, whole))
