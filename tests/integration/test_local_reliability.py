"""The local backend against real Azurite and real processes: storage that stops answering,
supervisors that die or are stopped, and an exit record on every path."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

import pytest
from azure.storage.blob import BlobServiceClient, ExponentialRetry

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeJobHandle, ComputeJobSpec, ComputeState, InputFile
from hastegeo.compute.local.adapter import LocalBackend
from hastegeo.compute.local.layout import LocalLayout, file_lock, pid_alive, read_json, write_json
from hastegeo.config import load_settings
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite

SLEEPER = ("python", "-c", "import time; time.sleep(60)")
WRITER = (
    "python",
    "-c",
    "import os, pathlib; pathlib.Path(os.environ['HASTE_JOB_WORKDIR'], 'outputs', 'r.txt').write_text('ok')",
)


@pytest.fixture
def own_azurite(tmp_path: Path) -> Iterator[Azurite]:
    """An Azurite this test may stop and start again (data on disk, so it survives the restart)."""
    with Azurite(str(tmp_path / "azurite")) as emulator:
        blobs = BlobServiceClient.from_connection_string(emulator.connection_string)
        for name in ("haste-inputs", "haste-outputs"):
            blobs.create_container(name)
        yield emulator


def make_backend(connection_string: str, root: Path, retry: ExponentialRetry | None = None) -> LocalBackend:
    settings = load_settings({"AzureWebJobsStorage": connection_string, "HASTE_LOCAL_ROOT": str(root)})
    blobs = BlobServiceClient.from_connection_string(connection_string)
    return LocalBackend(BackendContext(settings=settings, blob_service=blobs), root, 2, sys.executable, retry=retry)


def spec(name: str, entrypoint: tuple[str, ...], inputs: tuple[InputFile, ...] = ()) -> ComputeJobSpec:
    return ComputeJobSpec(
        job_id=name,
        name=f"haste-{name}",
        workload="artifacts",
        entrypoint=entrypoint,
        inputs=inputs,
        output=BlobLocation(container="haste-outputs", path=f"jobs/{name}"),
        time_limit_s=120,
    )


def put_input(azurite: Azurite, name: str, data: bytes) -> None:
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    blobs.get_blob_client("haste-inputs", name).upload_blob(data, overwrite=True)


def input_file(path: str) -> InputFile:
    return InputFile(source=BlobLocation(container="haste-inputs", path=path), dest="a.bin")


def outage(azurite: Azurite, seconds: float) -> threading.Thread:
    """Stop storage now and start it again on the same ports after ``seconds``, in the background."""
    blob_port = urlparse(azurite.blob_url).port or 0
    queue_port = urlparse(azurite.queue_url).port or 0
    azurite.stop()

    def restart() -> None:
        time.sleep(seconds)
        azurite.start(blob_port=blob_port, queue_port=queue_port)

    thread = threading.Thread(target=restart)
    thread.start()
    return thread


def wait_for(condition: Callable[[], object], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def ended_status(backend: LocalBackend, handle: ComputeJobHandle, timeout: float = 30.0) -> ComputeState:
    deadline = time.monotonic() + timeout
    while True:
        status = backend.status(handle)
        if status.state.terminal or time.monotonic() > deadline:
            return status.state
        time.sleep(0.05)


# -- storage that stops answering ---------------------------------------------------------------


def test_staging_rides_out_a_short_storage_outage(own_azurite: Azurite, tmp_path: Path) -> None:
    backend = make_backend(own_azurite.connection_string, tmp_path / "local")
    put_input(own_azurite, "p1/a.bin", b"alpha" * 1000)
    restarted = outage(own_azurite, 1.5)
    try:
        handle = backend.submit(spec("stage-outage", WRITER, (input_file("p1/a.bin"),)))
    finally:
        restarted.join()
        backend.close()
    staged = tmp_path / "local" / "jobs" / "haste-stage-outage" / "work" / "inputs" / "a.bin"
    assert staged.read_bytes() == b"alpha" * 1000
    assert ended_status(backend, handle) is ComputeState.SUCCEEDED


def test_upload_rides_out_a_short_storage_outage(own_azurite: Azurite, tmp_path: Path) -> None:
    backend = make_backend(own_azurite.connection_string, tmp_path / "local")
    handle = backend.submit(spec("upload-outage", WRITER))
    state = tmp_path / "local" / "jobs" / "haste-upload-outage" / "state"
    wait_for(lambda: (state / "exit.json").exists())
    restarted = outage(own_azurite, 1.5)
    try:
        assert backend.status(handle).state is ComputeState.SUCCEEDED
        backend.collect_outputs(handle)  # waited for storage, then uploaded
    finally:
        restarted.join()
        backend.close()
    blobs = BlobServiceClient.from_connection_string(own_azurite.connection_string)
    uploaded = blobs.get_blob_client("haste-outputs", "jobs/upload-outage/outputs/r.txt").download_blob().readall()
    assert uploaded == b"ok"


def test_staging_past_its_budget_is_recorded_and_staged_again_later(own_azurite: Azurite, tmp_path: Path) -> None:
    impatient = ExponentialRetry(retry_total=1, initial_backoff=0, increment_base=0, random_jitter_range=0)
    backend = make_backend(own_azurite.connection_string, tmp_path / "local", retry=impatient)
    put_input(own_azurite, "p1/a.bin", b"beta")
    job = spec("stage-budget", WRITER, (input_file("p1/a.bin"),))
    restarted = outage(own_azurite, 2.0)
    try:
        with pytest.raises(TransientBackendError, match="staging inputs failed"):
            backend.submit(job)
        ended = read_json(tmp_path / "local" / "jobs" / "haste-stage-budget" / "state" / "exit.json")
        assert ended is not None
        assert ended["stage"] == "staging"
        assert str(ended["reason"]).startswith("staging inputs failed")
        assert "stage-budget" not in {job_id for job_id, _ in backend.list_active()}  # ended, not an orphan
    finally:
        restarted.join()
    handle = backend.submit(job)  # the pipeline's retry: stages again and runs
    try:
        assert ended_status(backend, handle) is ComputeState.SUCCEEDED
    finally:
        backend.close()


def test_a_missing_input_is_recorded_as_the_end_of_the_job(own_azurite: Azurite, tmp_path: Path) -> None:
    backend = make_backend(own_azurite.connection_string, tmp_path / "local")
    job = spec("missing", WRITER, (input_file("p1/nothing.bin"),))
    with pytest.raises(TerminalBackendError, match="an input is missing"):
        backend.submit(job)
    ended = read_json(tmp_path / "local" / "jobs" / "haste-missing" / "state" / "exit.json")
    assert ended is not None
    assert str(ended["reason"]).startswith("an input is missing")
    assert backend.list_active() == []
    backend.close()


# -- supervisors that die or are stopped ---------------------------------------------------------


def running_job(backend: LocalBackend, root: Path, name: str) -> tuple[ComputeJobHandle, int, int]:
    """Submit a sleeping job; return its handle, supervisor pid and workload pid once it runs."""
    handle = backend.submit(spec(name, SLEEPER))
    layout = LocalLayout(root)
    wait_for(lambda: read_json(layout.state(f"haste-{name}") / "running.json") is not None)
    running = read_json(layout.state(f"haste-{name}") / "running.json") or {}
    supervisor = layout.active_pid(f"haste-{name}")
    assert supervisor is not None
    return handle, supervisor, int(running["pid"])


def status_after_supervisor(backend: LocalBackend, handle: ComputeJobHandle, supervisor: int) -> tuple[str, str]:
    wait_for(lambda: not pid_alive(supervisor))
    status = backend.status(handle)
    return status.state.value, status.reason or ""


def test_a_supervisor_stopped_by_a_signal_records_why_and_stops_its_workload(
    own_azurite: Azurite, tmp_path: Path
) -> None:
    backend = make_backend(own_azurite.connection_string, tmp_path / "local")
    handle, supervisor, workload = running_job(backend, tmp_path / "local", "sigterm")
    os.kill(supervisor, signal.SIGTERM)
    state, reason = status_after_supervisor(backend, handle, supervisor)
    backend.close()
    assert state == "failed"
    assert reason.startswith("the local supervisor was stopped by SIGTERM; the workload was stopped with it")
    assert not pid_alive(workload)


def test_a_killed_supervisor_is_recorded_by_the_adapter_once(own_azurite: Azurite, tmp_path: Path) -> None:
    backend = make_backend(own_azurite.connection_string, tmp_path / "local")
    handle, supervisor, workload = running_job(backend, tmp_path / "local", "sigkill")
    os.kill(supervisor, signal.SIGKILL)
    state, reason = status_after_supervisor(backend, handle, supervisor)
    assert state == "failed"
    assert reason.startswith(
        "the local supervisor was killed after starting the workload, so its exit was not recorded; "
        "its workload was stopped"
    )
    wait_for(lambda: not pid_alive(workload))
    assert backend.list_active() == []  # recorded: the reconciler will not cancel it every minute
    assert backend.status(handle).reason == reason  # the same answer from the record
    backend.close()


def test_a_supervisor_that_fails_on_its_own_records_the_exception(tmp_path: Path) -> None:
    layout = LocalLayout(tmp_path / "local").ensure()
    layout.write_config(1, sys.executable)
    write_json(layout.job_dir("bad") / "spec.json", {"argv": [["not", "a", "string"]], "timeLimitS": 5})
    done = subprocess.run(
        [sys.executable, "-m", "hastegeo.compute.local.supervisor", str(layout.root), "bad"], timeout=60, check=False
    )
    ended = read_json(layout.state("bad") / "exit.json")
    assert ended is not None, done
    assert str(ended["reason"]).startswith("the local supervisor failed: TypeError")
    assert (layout.root / "exited" / "bad").exists()  # the pipeline is told at once


def test_a_job_being_admitted_is_never_mistaken_for_a_dead_one(own_azurite: Azurite, tmp_path: Path) -> None:
    """Admission takes a job off the queue, then starts and records its supervisor: status must wait."""
    backend = make_backend(own_azurite.connection_string, tmp_path / "local")
    layout = LocalLayout(tmp_path / "local")
    name = "haste-admitting"
    handle = ComputeJobHandle(
        backend="local",
        provider_ids={"name": name},
        output=BlobLocation(container="haste-outputs", path="jobs/admitting"),
        submitted_at=datetime.now(UTC),
    )
    write_json(layout.job_dir(name) / "spec.json", {"jobId": "admitting", "argv": list(SLEEPER)})
    layout.state(name).mkdir(parents=True)
    (layout.state(name) / "ready").touch()
    answers: list[ComputeState] = []
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with layout.scheduler_lock():  # admission in progress: off the queue, supervisor not yet recorded
            asking = threading.Thread(target=lambda: answers.append(backend.status(handle).state))
            asking.start()
            asking.join(0.5)
            assert answers == []  # waits for admission instead of declaring the job dead
            (layout.root / "active" / name).write_text(str(stand_in.pid))
        asking.join(10)
        assert answers == [ComputeState.QUEUED]
        assert not (layout.state(name) / "exit.json").exists()
    finally:
        stand_in.kill()
        stand_in.wait()
        backend.close()


def test_two_worker_processes_upload_an_ended_job_once(own_azurite: Azurite, tmp_path: Path) -> None:
    """A delivery in another process waits for the upload under way, then finds it done (and cleaned up)."""
    first = make_backend(own_azurite.connection_string, tmp_path / "local")
    second = make_backend(own_azurite.connection_string, tmp_path / "local")  # another worker's adapter
    handle = first.submit(spec("two-uploads", WRITER))
    state = tmp_path / "local" / "jobs" / "haste-two-uploads" / "state"
    wait_for(lambda: (state / "exit.json").exists())
    errors: list[BaseException] = []

    def collect() -> None:
        try:
            second.collect_outputs(handle)
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)

    try:
        with file_lock(state / "upload.lock"):  # the first delivery is uploading
            waiting = threading.Thread(target=collect)
            waiting.start()
            time.sleep(0.5)
            assert waiting.is_alive()  # the second waits instead of uploading beside it
            (state / "uploaded").touch()  # the first finishes and cleans the files up
            shutil.rmtree(tmp_path / "local" / "jobs" / "haste-two-uploads" / "work")
        waiting.join(10)
        assert not waiting.is_alive()
        assert errors == []
    finally:
        first.close()
        second.close()
