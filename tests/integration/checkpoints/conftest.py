"""A training job long enough to preempt between epochs, and the runtimes that run it (local, Batch, both)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.failover import Failover
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import JobMessage
from hastegeo.workloads._run.sample_data import SampleScene, generate
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.integration.conftest import drive
from tests.support.runtime import development_runtime
from tests.support.storage import isolated_storage
from tests.support.waiting import wait_for

EPOCHS = 8
# About a quarter of a second per epoch here: far longer than the test service takes to see an epoch's
# line and tell the task, so the preemption lands in the third epoch, never after it.
ITERATIONS = 4000
TOLERANCE = 1e-12  # full-batch gradient descent from the same state is deterministic: the same floats


@pytest.fixture(scope="session")
def scene(tmp_path_factory: pytest.TempPathFactory) -> SampleScene:
    return generate(tmp_path_factory.mktemp("checkpoint-scene"), size=256, seed=3)


def environment(azurite: Azurite, unique: str, backends: str, service: BatchTestService | None) -> dict[str, str]:
    env = {
        **isolated_storage(azurite.connection_string, unique),
        "HASTE_BACKENDS_ENABLED": backends,
    }
    if service is not None:
        env.update(
            BATCH_ACCOUNT_URL=service.url,
            BATCH_AUTH_MODE="shared_key",
            BATCH_ACCOUNT_NAME=service.account_name,
            BATCH_ACCOUNT_KEY=service.account_key,
            BATCH_POOLS="training=cpu-pool",
            BATCH_IMAGES="training=haste/geo:1",
            BATCH_IDENTITY_RESOURCE_ID="/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/x",
        )
    return env


@pytest.fixture
def batch_service(azurite: Azurite) -> Iterator[BatchTestService]:
    service = BatchTestService(azurite.connection_string).start()
    yield service
    service.stop()


def make_runtime(env: dict[str, str], tmp_path: Path, **options: Any) -> Runtime:
    """The runtime over ``env``; ``options`` go to :func:`build_runtime` (``factories``: backends on doubles)."""
    env = {**env, "HASTE_LOCAL_ROOT": str(tmp_path / "local")}
    return development_runtime(load_settings(env), sleep=lambda seconds: None, **options)


def close(runtime: Runtime) -> None:
    for adapter in runtime.registry.built().values():
        adapter.close()


def put_scene(runtime: Runtime, scene: SampleScene, project: str = "p1") -> list[dict[str, str]]:
    container = runtime.blobs.get_container_client(runtime.settings.storage.inputs_container)
    container.upload_blob(f"{project}/ckpt/imagery.tif", scene.rasters[0].read_bytes(), overwrite=True)
    container.upload_blob(f"{project}/ckpt/labels.geojson", scene.labels.read_bytes(), overwrite=True)
    return [{"blob": f"{project}/ckpt/imagery.tif"}, {"blob": f"{project}/ckpt/labels.geojson"}]


def training_request(scene: SampleScene, backend: str, project: str = "p1") -> dict[str, Any]:
    return {
        "workload": "training",
        "projectId": project,
        "backend": backend,
        "inputs": [{"blob": f"{project}/ckpt/imagery.tif"}, {"blob": f"{project}/ckpt/labels.geojson"}],
        "parameters": {
            "classes": list(scene.classes),
            "seed": 1,
            "iterations": ITERATIONS,
            "epochs": EPOCHS,
            "packageArtifacts": False,
        },
    }


def trained(runtime: Runtime, scene: SampleScene, backend: str) -> Job:
    """A training job on ``backend`` run to its end without interruption; the job as it ended (succeeded)."""
    job = runtime.acceptor.accept(parse_request(training_request(scene, backend))).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    finished = drive(runtime, job.id, timeout=120)
    assert finished.state is JobState.SUCCEEDED, finished.reason
    return finished


def model_of(runtime: Runtime, job: Job) -> dict[str, Any]:
    container = runtime.blobs.get_container_client(runtime.settings.storage.outputs_container)
    document: dict[str, Any] = json.loads(container.download_blob(f"jobs/{job.id}/outputs/model.json").readall())
    return document


def assert_same_model(one: dict[str, Any], other: dict[str, Any]) -> None:
    for key in ("weights", "bias", "featureMean", "featureStd"):
        np.testing.assert_allclose(np.asarray(one[key]), np.asarray(other[key]), rtol=0, atol=TOLERANCE)


def messages(job: Job) -> list[str]:
    return [event.message for event in job.history]


def epoch_lines(job: Job) -> list[str]:
    return [m for m in messages(job) if m.startswith("epoch ")]


def epoch_log(runtime: Runtime, job: Job) -> list[str]:
    """The epoch lines of the job's progress log as its last attempt left it in blob storage."""
    container = runtime.blobs.get_container_client(runtime.settings.storage.outputs_container)
    text = container.download_blob(f"jobs/{job.id}/logs/training_progress.log").readall().decode()
    return [line.split(" ", 1)[1] for line in text.splitlines() if line.split(" ", 1)[1].startswith("epoch ")]


def moved_mid_run(runtime: Runtime, scene: SampleScene, target: str) -> Job:
    """An ``auto`` job started on the local backend and moved to ``target`` in its third epoch; the job as it ended.

    Everything is real but the trigger: the poll step moves a job on when its compute does not come (a
    queued job), so this starts the move the way that step does (``Failover.begin``). From there the
    pipeline's own steps cancel the local process (SIGTERM: the runtime copies the checkpoint at once),
    move the job to ``target``, and its run puts the checkpoint back and trains the remaining epochs.
    """
    job = runtime.acceptor.accept(parse_request(training_request(scene, "auto"))).job
    assert job.backend == "local"
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))

    def two_epochs() -> bool:
        current = runtime.store.get(job.id)
        runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=current.poll_seq))
        return f"epoch 2 of {EPOCHS}" in " ".join(messages(runtime.store.get(job.id)))

    wait_for(two_epochs, 120, "two epochs on the local backend")
    assert Failover(runtime.deps).begin(runtime.store.read(job.id), "the local host is being drained")

    def moved() -> bool:
        current = runtime.store.get(job.id)
        if current.state is JobState.RUNNING:
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=current.poll_seq))
        return current.state is JobState.QUEUED and current.backend == target

    wait_for(moved, 60, f"the move to {target}")
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    finished = drive(runtime, job.id, timeout=120)
    assert finished.state is JobState.SUCCEEDED, finished.reason
    assert f"moved from local to {target}: its provider job is gone" in messages(finished), messages(finished)
    return finished


def resumed_at(job: Job) -> int:
    """The epoch the job's one resumed attempt started at (its history says it once)."""
    pattern = re.compile(rf"resumed from the checkpoint of attempt 1, epoch (\d) of {EPOCHS}")
    resumed = [match for line in messages(job) if (match := pattern.fullmatch(line))]
    assert len(resumed) == 1, messages(job)
    return int(resumed[0].group(1))
