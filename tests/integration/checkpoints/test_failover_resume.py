"""An ``auto`` job that leaves the local backend mid-run goes on from its checkpoint on Batch.

Everything is real but the trigger: the poll step moves a job on when its compute does not come
(a queued job), so the test starts the move the way that step does (``Failover.begin``) while the
local workload is in its third epoch. From there the pipeline's own steps cancel the local process
(SIGTERM: the runtime copies the checkpoint at once), move the job to Batch, and Batch's run puts
the checkpoint back and trains the remaining epochs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.failover import Failover
from hastegeo.store.queues import JobMessage
from hastegeo.workloads._run.sample_data import SampleScene
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.integration.conftest import drive

from .conftest import (
    EPOCHS,
    assert_same_model,
    close,
    environment,
    epoch_log,
    make_runtime,
    messages,
    model_of,
    put_scene,
    training_request,
    wait_for,
)

pytestmark = pytest.mark.azurite
RESUMED = re.compile(rf"resumed from the checkpoint of attempt 1, epoch (\d) of {EPOCHS}")


def test_auto_job_moved_from_local_to_batch_resumes_where_local_stopped(
    azurite: Azurite, unique: str, tmp_path: Path, scene: SampleScene, batch_service: BatchTestService
) -> None:
    env = environment(azurite, unique, "local,azure_batch", batch_service)
    env["HASTE_BACKEND_WEIGHTS"] = "local=1000000,azure_batch=0.000001"  # auto picks local first, Batch next
    runtime = make_runtime(env, tmp_path)
    try:
        put_scene(runtime, scene)
        whole = runtime.acceptor.accept(parse_request(training_request(scene, "azure_batch"))).job
        runtime.submit.handle(JobMessage(job_id=whole.id, kind="submit"))
        whole = drive(runtime, whole.id, timeout=120)
        assert whole.state is JobState.SUCCEEDED, whole.reason

        job = runtime.acceptor.accept(parse_request(training_request(scene, "auto"))).job
        assert job.backend == "local"
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))

        def two_epochs() -> bool:
            current = runtime.store.get(job.id)
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=current.poll_seq))
            return f"epoch 2 of {EPOCHS}" in " ".join(messages(runtime.store.get(job.id)))

        wait_for(two_epochs, 120, "two epochs on the local backend")
        assert Failover(runtime.deps).begin(runtime.store.read(job.id), "the local host is being drained")

        def on_batch() -> bool:
            current = runtime.store.get(job.id)
            if current.state is JobState.RUNNING:
                runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=current.poll_seq))
            return current.state is JobState.QUEUED and current.backend == "azure_batch"

        wait_for(on_batch, 60, "the move to Batch")
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
        finished = drive(runtime, job.id, timeout=120)
        assert finished.state is JobState.SUCCEEDED, finished.reason
    finally:
        close(runtime)

    lines = messages(finished)
    assert "moved from local to azure_batch: its provider job is gone" in lines, lines
    resumed = [match for line in lines if (match := RESUMED.fullmatch(line))]
    assert len(resumed) == 1, lines
    first = int(resumed[0].group(1))
    assert first >= 3  # local finished two epochs at least, and they were not lost
    # Batch's run trained only the epochs local had not finished, with the losses an uninterrupted run had.
    assert epoch_log(runtime, finished) == epoch_log(runtime, whole)[first - 1 :]
    assert_same_model(model_of(runtime, finished), model_of(runtime, whole))
