"""Checkpoints on Azure ML: the production adapter's real azure-ai-ml entities, run by the stand-in's cluster.

The stand-in's cluster (:mod:`hastegeo_dev.testing.aml_compute`) runs each command job the adapter
submits as a real process, with the entity's environment variables: the workload's runtime finds its
checkpoint folder and location there and copies it to Azurite as it would with the cluster's identity.
A stand-in fault takes the node away after the second epoch (SIGTERM, then the job ends ``Failed``),
as the Batch test service's preemption does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hastegeo.compute.azure_ml.adapter import AzureMLBackend, create
from hastegeo.compute.context import BackendContext
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.store.queues import JobMessage
from hastegeo.workloads._run.sample_data import SampleScene
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.aml_compute import StandInCluster
from hastegeo_dev.testing.aml_standin import StandInMLClient
from tests.integration.conftest import drive
from tests.support.aml import AML_SETTINGS

from .conftest import (
    EPOCHS,
    assert_same_model,
    close,
    environment,
    epoch_lines,
    epoch_log,
    make_runtime,
    messages,
    model_of,
    moved_mid_run,
    put_scene,
    resumed_at,
    training_request,
)

pytestmark = [
    pytest.mark.azurite,
    pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning"),
]
PROGRESS = "logs/training_progress.log"


@pytest.fixture
def cluster(azurite: Azurite, tmp_path: Path) -> Iterator[StandInCluster]:
    cluster = StandInCluster(StandInMLClient(), azurite.connection_string, tmp_path / "aml")
    yield cluster
    cluster.stop()


def aml_runtime(azurite: Azurite, unique: str, tmp_path: Path, cluster: StandInCluster, backends: str) -> Runtime:
    """The pipeline with Azure ML (the production factory, given the stand-in) running training on haste-gpu."""

    def factory(context: BackendContext) -> AzureMLBackend:
        return create(context, client_factory=lambda _settings: cluster.client)

    env = {
        **environment(azurite, unique, backends, None),
        **AML_SETTINGS,
        "AML_COMPUTE": "training=haste-gpu",
        "AML_RETRY_DELAY_S": "0.1",
    }
    if "local" in backends:
        env["HASTE_BACKEND_WEIGHTS"] = "local=1000000,azure_ml=0.000001"  # auto picks local first, Azure ML next
    return make_runtime(env, tmp_path, factories={"azure_ml": factory})


def run(runtime: Runtime, request: dict[str, object]) -> Job:
    job = runtime.acceptor.accept(parse_request(request)).job
    runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    return drive(runtime, job.id, timeout=120)


def test_interrupted_after_its_second_epoch_a_retry_that_asks_resumes_from_the_checkpoint_on_azure_ml(
    azurite: Azurite, unique: str, tmp_path: Path, scene: SampleScene, cluster: StandInCluster
) -> None:
    runtime = aml_runtime(azurite, unique, tmp_path, cluster, "azure_ml")
    try:
        put_scene(runtime, scene)
        whole = run(runtime, training_request(scene, "azure_ml"))
        assert whole.state is JobState.SUCCEEDED, whole.reason

        cluster.interrupt_on_output(f"epoch 2 of {EPOCHS}", path=PROGRESS)
        interrupted = run(runtime, training_request(scene, "azure_ml"))
        assert interrupted.state is JobState.FAILED, messages(interrupted)

        retry = runtime.retry.retry(interrupted, submitter=None, resume=True).job
        assert (retry.backend, retry.resume_from) == ("azure_ml", interrupted.id)
        runtime.submit.handle(JobMessage(job_id=retry.id, kind="submit"))
        finished = drive(runtime, retry.id, timeout=120)
        assert finished.state is JobState.SUCCEEDED, finished.reason
    finally:
        close(runtime)

    assert cluster.runs == {f"haste-{job.id}": 1 for job in (whole, interrupted, retry)}
    assert "The node running the job was taken away (stand-in fault)" in " ".join(messages(interrupted))
    lines = messages(finished)
    assert f"resumed from the checkpoint of job {interrupted.id}, attempt 1, epoch 3 of {EPOCHS}" in lines, lines
    # The retry ran the remaining epochs only, with the losses the uninterrupted run had at those epochs:
    # counted from its own log, not timed.
    assert epoch_lines(finished) == epoch_log(runtime, finished) == epoch_log(runtime, whole)[2:]
    assert len(epoch_log(runtime, finished)) == EPOCHS - 2
    assert_same_model(model_of(runtime, finished), model_of(runtime, whole))
    # Each job's copies are under its own id: the retry read the interrupted job's and wrote its own.
    outputs = runtime.blobs.get_container_client(runtime.settings.storage.outputs_container)
    for job in (interrupted, finished):
        assert outputs.get_blob_client(f"jobs/{job.id}/checkpoints/latest.json").exists()


def test_an_auto_job_moved_from_local_to_azure_ml_resumes_where_local_stopped(
    azurite: Azurite, unique: str, tmp_path: Path, scene: SampleScene, cluster: StandInCluster
) -> None:
    runtime = aml_runtime(azurite, unique, tmp_path, cluster, "local,azure_ml")
    try:
        put_scene(runtime, scene)
        whole = run(runtime, training_request(scene, "local"))
        assert whole.state is JobState.SUCCEEDED, whole.reason
        finished = moved_mid_run(runtime, scene, "azure_ml")
    finally:
        close(runtime)

    first = resumed_at(finished)
    assert first >= 3  # local finished two epochs at least, and they were not lost
    assert cluster.runs == {f"haste-{finished.id}": 1}
    # Azure ML's run trained only the epochs local had not finished, with the losses an uninterrupted run had.
    assert epoch_log(runtime, finished) == epoch_log(runtime, whole)[first - 1 :]
    assert_same_model(model_of(runtime, finished), model_of(runtime, whole))


def test_a_job_document_naming_another_projects_job_submits_nothing_to_azure_ml(
    azurite: Azurite, unique: str, tmp_path: Path, scene: SampleScene, cluster: StandInCluster
) -> None:
    """The Azure ML case of ADR 0044's rule: the cluster's identity could read any job's copy, so the rule holds
    before the adapter: whatever wrote the job document, no entity naming another project's checkpoint is built."""
    runtime = aml_runtime(azurite, unique, tmp_path, cluster, "azure_ml")
    try:
        put_scene(runtime, scene, project="p2")
        put_scene(runtime, scene)
        theirs = runtime.acceptor.accept(parse_request(training_request(scene, "azure_ml", project="p2"))).job
        mine = runtime.acceptor.accept(parse_request(training_request(scene, "azure_ml"))).job
        runtime.store.update(mine.id, lambda job: job.model_copy(update={"resume_from": theirs.id}))
        runtime.submit.handle(JobMessage(job_id=mine.id, kind="submit"))
        failed = runtime.store.get(mine.id)
    finally:
        close(runtime)

    assert failed.state is JobState.FAILED
    assert f"resumeFrom: job {theirs.id} is not a job of project p1" in (failed.reason or ""), messages(failed)
    assert cluster.client.count("jobs.create_or_update") == 0
    assert cluster.runs == {}
