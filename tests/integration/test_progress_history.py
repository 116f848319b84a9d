"""A workload's progress lines reach the history with the time and state they happened in,
whether the poll step copies them while the job runs or post-processing copies them at the end."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.progress import parse_line
from hastegeo.runtime import Runtime
from tests.conftest import RuntimeFactory
from tests.support.processors import ScriptProcessor

from .conftest import drive
from .test_pipeline import submit

pytestmark = pytest.mark.azurite

# Writes its progress with the workloads' own ProgressLog, a while after it started, then succeeds.
STAMPED = """
import hashlib, json, os, pathlib, time
from hastegeo.workloads._run.harness import ProgressLog
work = pathlib.Path(os.environ["HASTE_JOB_WORKDIR"])
time.sleep(1.0)
log = ProgressLog(work / "logs" / "script_progress.log")
for step in range(1, 4):
    log.step(f"step {step} of 3")
    time.sleep(0.3)
log.close()
data = b"done"
(work / "outputs" / "result.txt").write_bytes(data)
manifest = {"files": [{"name": "result.txt", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}]}
(work / "outputs" / "script_manifest.json").write_text(json.dumps(manifest))
"""


@pytest.fixture
def runtime(make_runtime: RuntimeFactory) -> Runtime:
    built = make_runtime()
    built.deps.processors["artifacts"] = ScriptProcessor()
    return built


def written(runtime: Runtime, job: Job) -> dict[str, datetime | None]:
    """The progress log as the workload wrote it (its blob copy): text -> time."""
    container = runtime.blobs.get_container_client(runtime.settings.storage.outputs_container)
    data = container.download_blob(f"jobs/{job.id}/logs/script_progress.log").readall()
    return {line.text: line.at for line in map(parse_line, data.decode().splitlines())}


def assert_truthful(runtime: Runtime, job: Job) -> None:
    assert job.state is JobState.SUCCEEDED, job.reason
    steps = [e for e in job.history if e.message.startswith("step ")]
    assert [e.message for e in steps] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert {e.state for e in steps} == {JobState.RUNNING}
    assert {e.source for e in steps} == {"workload"}
    stamps = written(runtime, job)
    assert {e.message: e.at for e in steps} == {text: stamps[text] for text in (e.message for e in steps)}
    times = [e.at for e in job.history]
    assert times == sorted(times)  # time never runs backwards along the history
    states = [e.state for e in job.history]
    assert job.history.index(steps[-1]) < states.index(JobState.POSTPROCESSING)


def test_lines_copied_while_the_job_runs_keep_the_time_they_were_written(runtime: Runtime) -> None:
    job = drive(runtime, submit(runtime, inputs=[], parameters={"script": STAMPED}))
    assert job.progress_offset > 0  # lines were copied while it ran
    assert_truthful(runtime, job)


def test_lines_copied_by_post_processing_go_back_to_when_the_job_was_running(runtime: Runtime, tmp_path: Path) -> None:
    job_id = submit(runtime, inputs=[], parameters={"script": STAMPED})
    exit_file = tmp_path / "local" / "jobs" / f"haste-{job_id}" / "state" / "exit.json"
    deadline = time.monotonic() + 30
    while not exit_file.exists():  # nobody polls meanwhile: every line is copied at the end
        assert time.monotonic() < deadline, "the workload did not finish"
        time.sleep(0.05)
    job = drive(runtime, job_id)
    assert runtime.store.get(job_id).progress_offset == 0  # nothing was copied while it ran
    assert_truthful(runtime, job)
