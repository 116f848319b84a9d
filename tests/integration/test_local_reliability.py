"""The local backend against real Azurite and real processes: storage that stops answering,
one process per job, workloads and hosts that die or are stopped, and an exit record on every path."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

import pytest
from azure.storage.blob import BlobServiceClient, ExponentialRetry

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeJobHandle, ComputeJobSpec, ComputeState, InputFile
from hastegeo.compute.fingerprint import legacy_fingerprint
from hastegeo.compute.local.adapter import LocalBackend
from hastegeo.compute.local_node.layout import LocalLayout, file_lock, pid_alive
from hastegeo.runtime import transfer_client
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import TerminalBackendError, TransientBackendError
from hastegeo.utils.files import read_json, write_json
from hastegeo_dev.devhost.azurite import Azurite
from tests.support.waiting import wait_for

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
        _containers(emulator)
        yield emulator


@pytest.fixture(scope="module")
def storage() -> Iterator[Azurite]:
    """One Azurite for the module's tests that never stop storage (an Azurite's start costs seconds of
    CPU). Each test runs its jobs under its own local root and reads no blob another test writes."""
    with Azurite(in_memory=True) as emulator:
        _containers(emulator)
        yield emulator


def _containers(azurite: Azurite) -> None:
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    for name in ("haste-inputs", "haste-outputs"):
        blobs.create_container(name)


def make_backend(
    connection_string: str, root: Path, retry: ExponentialRetry | None = None, slots: int = 2, niceness: int = 0
) -> LocalBackend:
    settings = load_settings({"AzureWebJobsStorage": connection_string, "HASTE_LOCAL_ROOT": str(root)})
    blobs = BlobServiceClient.from_connection_string(connection_string)
    context = BackendContext(
        settings=settings.backend("local"), blob_service=blobs, transfer_blobs=transfer_client(blobs, retry)
    )
    return LocalBackend(context, root, slots, sys.executable, niceness)


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


def test_a_missing_input_is_recorded_as_the_end_of_the_job(storage: Azurite, tmp_path: Path) -> None:
    backend = make_backend(storage.connection_string, tmp_path / "local")
    job = spec("missing", WRITER, (input_file("p1/nothing.bin"),))
    with pytest.raises(TerminalBackendError, match="an input is missing"):
        backend.submit(job)
    ended = read_json(tmp_path / "local" / "jobs" / "haste-missing" / "state" / "exit.json")
    assert ended is not None
    assert str(ended["reason"]).startswith("an input is missing")
    assert backend.list_active() == []
    backend.close()


# -- one process per job, and an exit record on every path ---------------------------------------

WITH_CHILD = ("python", "-c", "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)")
HOST = """
import sys, time
from pathlib import Path
from tests.integration.test_local_reliability import make_backend, spec
backend = make_backend(sys.argv[1], Path(sys.argv[2]), slots=3)
backend.submit(spec("finishes", ("python", "-c", "import time; time.sleep(2)")))
backend.submit(spec("killed", ("python", "-c", "import time; time.sleep(60)")))
backend.submit(spec("not-python", ("sleep", "2")))
time.sleep(60)
"""


def running_job(
    backend: LocalBackend, root: Path, name: str, entrypoint: tuple[str, ...] = SLEEPER, limit_s: float = 120
) -> tuple[ComputeJobHandle, int]:
    """Submit a job; return its handle and its process's pid once it runs."""
    handle = backend.submit(spec(name, entrypoint).model_copy(update={"time_limit_s": limit_s}))
    layout = LocalLayout(root)
    wait_for(lambda: read_json(layout.state(f"haste-{name}") / "running.json") is not None)
    pid = layout.active_pid(f"haste-{name}")
    assert pid == (read_json(layout.state(f"haste-{name}") / "running.json") or {})["pid"]
    return handle, pid


def session(sid: int) -> list[tuple[int, int]]:
    """(pid, parent pid) of every live process in session ``sid``, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append((int(entry.name), int(fields[1])))
    return members


def ended(backend: LocalBackend, handle: ComputeJobHandle) -> tuple[ComputeState, int | None, str]:
    assert ended_status(backend, handle).terminal
    status = backend.status(handle)
    return status.state, status.exit_code, status.reason or ""


def test_a_job_is_one_process_the_host_started_and_its_slot_goes_to_the_next(storage: Azurite, tmp_path: Path) -> None:
    backend = make_backend(storage.connection_string, tmp_path / "local")  # 2 slots
    first, pid = running_job(backend, tmp_path / "local", "one")
    running_job(backend, tmp_path / "local", "two")
    third = backend.submit(spec("three", SLEEPER))
    try:
        assert session(pid) == [(pid, os.getpid())]  # the workload alone, a child of this host: no supervisor
        assert "hastegeo.compute.local_node.run" in Path(f"/proc/{pid}/cmdline").read_text()
        assert backend.status(third).state is ComputeState.QUEUED  # no free slot
        backend.cancel(first)
        assert ended(backend, first)[0] is ComputeState.CANCELLED
        wait_for(lambda: backend.status(third).state is ComputeState.RUNNING)  # its slot went to the next job
        assert not pid_alive(pid)  # reaped: no zombie left behind
        for name in ("one", "two", "three"):
            launches = (tmp_path / "local" / "jobs" / f"haste-{name}" / "state" / "launches.log").read_text()
            assert len(launches.splitlines()) == 1
    finally:
        for _, handle in backend.list_active():
            backend.cancel(handle)
        backend.close()


def test_a_job_cancelled_while_its_inputs_were_staged_never_starts(storage: Azurite, tmp_path: Path) -> None:
    backend = make_backend(storage.connection_string, tmp_path / "local", slots=1)
    first, _ = running_job(backend, tmp_path / "local", "first")
    late = backend.submit(spec("late", SLEEPER))
    state = tmp_path / "local" / "jobs" / "haste-late" / "state"
    # A cancel that found the job neither queued nor running (its inputs were being staged) leaves only this:
    (state / "cancel").touch()
    try:
        backend.cancel(first)  # frees the only slot
        assert ended(backend, late)[0] is ComputeState.CANCELLED
        assert not (state / "launches.log").exists()  # never started
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("signum", "reason", "entrypoint"),
    [
        (signal.SIGTERM, "the workload was stopped by SIGTERM", WITH_CHILD),  # recorded by the workload itself
        (signal.SIGKILL, "the workload was killed by SIGKILL", WITH_CHILD),  # recorded by the host that reaps it
        (signal.SIGKILL, "the workload was killed by SIGKILL", ("sleep", "60")),  # not Python: the host records
    ],
)
def test_a_workload_stopped_by_a_signal_is_recorded_once_with_its_group(
    storage: Azurite, tmp_path: Path, signum: int, reason: str, entrypoint: tuple[str, ...]
) -> None:
    backend = make_backend(storage.connection_string, tmp_path / "local")
    handle, pid = running_job(backend, tmp_path / "local", "signalled", entrypoint)
    if entrypoint is WITH_CHILD:
        wait_for(lambda: len(session(pid)) == 2)
    os.kill(pid, signum)  # the workload only, not its group
    try:
        assert ended(backend, handle) == (ComputeState.FAILED, -signum, reason)
        wait_for(lambda: session(pid) == [])  # nothing it started outlives it
        assert backend.list_active() == []  # recorded: the reconciler will not cancel it every minute
        assert backend.status(handle).reason == reason  # the same answer from the record
    finally:
        backend.close()


@pytest.mark.parametrize("entrypoint", [WITH_CHILD, ("sleep", "60")], ids=["python", "not-python"])
def test_the_time_limit_stops_the_whole_group(storage: Azurite, tmp_path: Path, entrypoint: tuple[str, ...]) -> None:
    backend = make_backend(storage.connection_string, tmp_path / "local")
    handle, pid = running_job(backend, tmp_path / "local", "limited", entrypoint, limit_s=1)
    try:
        state, _, reason = ended(backend, handle)
        assert (state, reason) == (ComputeState.FAILED, "exceeded its time limit of 1s and was stopped")
        wait_for(lambda: session(pid) == [])
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("entrypoint", "code", "stderr"),
    [
        (("python", "-c", "import sys; sys.exit(4)"), 4, ""),
        (("python", "-c", "raise ValueError('band 4')"), 1, " | ValueError: band 4"),
        (("python", "-m", "no_such_module"), 1, "No module named no_such_module"),
        (("sh", "-c", "echo not python >&2; exit 3"), 3, "not python"),
        (("no-such-command",), 1, "could not start the workload: No such file or directory: no-such-command"),
    ],
)
def test_every_exit_code_is_recorded_with_the_end_of_stderr(
    storage: Azurite, tmp_path: Path, entrypoint: tuple[str, ...], code: int, stderr: str
) -> None:
    backend = make_backend(storage.connection_string, tmp_path / "local")
    try:
        state, exit_code, said = ended(backend, backend.submit(spec("exits", entrypoint)))
        assert (state, exit_code) == (ComputeState.FAILED, code)
        assert said.startswith(f"the workload exited with code {code}")
        assert said.endswith(stderr)
    finally:
        backend.close()


def test_a_python_workload_runs_as_python_would_and_is_recorded_after_its_threads(
    storage: Azurite, tmp_path: Path
) -> None:
    code = (
        "import atexit, json, os, pathlib, sys, threading, time\n"
        "out = pathlib.Path(os.environ['HASTE_JOB_WORKDIR'], 'outputs')\n"
        "seen = {'argv': sys.argv, 'batch': os.environ['AZ_BATCH_TASK_WORKING_DIR'], 'cwd': os.getcwd(),"
        " 'main': __name__}\n"
        "(out / 'seen.json').write_text(json.dumps(seen))\n"
        "atexit.register(lambda: (out / 'atexit.txt').write_text('hook'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), (out / 'late.txt').write_text('thread'))).start()\n"
    )
    backend = make_backend(storage.connection_string, tmp_path / "local")
    handle = backend.submit(spec("as-python", ("python", "-c", code, "a", "b")))
    work = tmp_path / "local" / "jobs" / "haste-as-python" / "work"
    try:
        wait_for(lambda: (work.parent / "state" / "exit.json").exists())
        assert (work / "outputs" / "late.txt").read_text() == "thread"  # the record waited for the thread
        assert (work / "outputs" / "atexit.txt").read_text() == "hook"  # and for the command's own hooks
        assert read_json(work / "outputs" / "seen.json") == {
            "argv": ["-c", "a", "b"],
            "batch": str(work),
            "cwd": str(work),
            "main": "__main__",
        }
        assert ended(backend, handle)[0] is ComputeState.SUCCEEDED
    finally:
        backend.close()


def test_a_workload_runs_below_the_host_in_a_session_and_autogroup_of_its_own(storage: Azurite, tmp_path: Path) -> None:
    code = (
        "import json, os, pathlib\n"
        "group = pathlib.Path('/proc/self/autogroup')\n"
        "seen = {'nice': os.nice(0), 'leader': os.getsid(0) == os.getpid(),"
        " 'autogroup': group.read_text().split()[-1] if group.exists() else None}\n"
        "pathlib.Path(os.environ['HASTE_JOB_WORKDIR'], 'outputs', 'priority.json').write_text(json.dumps(seen))\n"
    )
    host_group = Path("/proc/self/autogroup")
    host_before = host_group.read_text() if host_group.exists() else None
    backend = make_backend(storage.connection_string, tmp_path / "local", niceness=6)
    handle = backend.submit(spec("priority", ("python", "-c", code)))
    work = tmp_path / "local" / "jobs" / "haste-priority" / "work"
    try:
        wait_for(lambda: (work.parent / "state" / "exit.json").exists())
        expected = max(os.nice(0), 6)
        assert read_json(work / "outputs" / "priority.json") == {
            "nice": expected,
            "leader": True,
            "autogroup": None if host_before is None else str(expected),
        }
        assert (host_group.read_text() if host_group.exists() else None) == host_before  # the host's own is untouched
        assert ended(backend, handle)[0] is ComputeState.SUCCEEDED
    finally:
        backend.close()


def test_a_child_the_workload_forked_neither_records_nor_stops_the_job(storage: Azurite, tmp_path: Path) -> None:
    forks = ("python", "-c", "import os, time\nif os.fork() == 0:\n    time.sleep(60)\nelse:\n    time.sleep(3)")
    backend = make_backend(storage.connection_string, tmp_path / "local")
    handle, pid = running_job(backend, tmp_path / "local", "forks", forks)
    try:
        wait_for(lambda: len(session(pid)) == 2)
        child = next(member for member, _ in session(pid) if member != pid)
        os.kill(child, signal.SIGTERM)  # ends the child as it would without the job's handlers
        wait_for(lambda: len(session(pid)) == 1)
        assert not (tmp_path / "local" / "jobs" / "haste-forks" / "state" / "exit.json").exists()
        assert ended(backend, handle) == (ComputeState.SUCCEEDED, 0, "")
    finally:
        backend.close()


def test_a_killed_host_leaves_the_truth_on_disk_for_the_next(storage: Azurite, tmp_path: Path) -> None:
    """Python workloads record their own end; what ended unrecorded while no host watched is said to be so."""
    root = tmp_path / "local"
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, storage.connection_string, str(root)], cwd=Path(__file__).parents[2]
    )
    layout = LocalLayout(root)
    try:
        names = ("finishes", "killed", "not-python")
        wait_for(lambda: all(layout.active_pid(f"haste-{name}") for name in names), timeout=60)
        pids = {name: layout.active_pid(f"haste-{name}") or 0 for name in names}
    finally:
        host.kill()
        host.wait()
    os.kill(pids["killed"], signal.SIGKILL)  # while no host is watching
    wait_for(lambda: not any(pid_alive(pid) for pid in pids.values()))
    backend = make_backend(storage.connection_string, root)  # the restarted host
    assert {job_id for job_id, _ in backend.list_active()} == {"killed", "not-python"}  # no record yet
    handles = {
        name: ComputeJobHandle(
            backend="local",
            provider_ids={"name": f"haste-{name}"},
            output=BlobLocation(container="haste-outputs", path=f"jobs/{name}"),
            submitted_at=datetime.now(UTC),
        )
        for name in names
    }
    try:
        assert ended(backend, handles["finishes"])[0] is ComputeState.SUCCEEDED
        unrecorded = (
            ComputeState.FAILED,
            None,
            "the workload ended while no host was watching it (a SIGKILL, or a command that is not Python), "
            "so its exit was not recorded",
        )
        assert ended(backend, handles["killed"]) == unrecorded
        assert ended(backend, handles["not-python"]) == unrecorded
        assert backend.list_active() == []
    finally:
        backend.close()


def test_a_job_being_admitted_is_never_mistaken_for_a_dead_one(storage: Azurite, tmp_path: Path) -> None:
    """Admission takes a job off the queue, then starts and records its workload: status must wait."""
    backend = make_backend(storage.connection_string, tmp_path / "local")
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
        with layout.scheduler_lock():  # admission in progress: off the queue, workload not yet recorded
            asking = threading.Thread(target=lambda: answers.append(backend.status(handle).state))
            asking.start()
            asking.join(0.5)
            assert answers == []  # waits for admission instead of declaring the job dead
            (layout.root / "active" / name).write_text(str(stand_in.pid))
        asking.join(10)
        assert answers == [ComputeState.RUNNING]  # its workload is alive in its slot: running, not dead
        assert not (layout.state(name) / "exit.json").exists()
    finally:
        stand_in.kill()
        stand_in.wait()
        backend.close()


@pytest.mark.parametrize("asked_by", ["status", "a repeated submit"])
def test_a_staged_job_a_host_stopped_before_queueing_is_queued_again_once(
    storage: Azurite, tmp_path: Path, asked_by: str
) -> None:
    """``state/ready`` is written before the queue entry; a host killed in between left a job nothing started."""
    backend = make_backend(storage.connection_string, tmp_path / "local")
    layout = LocalLayout(tmp_path / "local")
    job = spec("lost", WRITER)
    backend.submit(job)
    name = job.name
    # Ended, reaped, and its slot given back: nothing of the first run is still at work.
    wait_for(lambda: (layout.state(name) / "exit.json").exists() and not any((layout.root / "active").iterdir()))
    # The same job as a host killed between `ready` and the queue entry would have left it.
    shutil.rmtree(layout.state(name))
    layout.state(name).mkdir()
    (layout.state(name) / "ready").touch()
    handle = ComputeJobHandle(
        backend="local",
        provider_ids={"name": name},
        output=BlobLocation(container="haste-outputs", path="jobs/lost"),
        submitted_at=datetime.now(UTC),
    )
    try:
        if asked_by == "status":
            assert backend.status(handle).state in (ComputeState.RUNNING, ComputeState.SUCCEEDED)
        else:
            backend.submit(job)
            backend.submit(job)  # and once more: still queued once
        assert ended_status(backend, handle) is ComputeState.SUCCEEDED
        assert len((layout.state(name) / "launches.log").read_text().splitlines()) == 1
        assert not any((layout.root / "queue").iterdir())
    finally:
        backend.close()


def test_a_repeat_binds_to_a_job_stored_with_the_legacy_fingerprint(storage: Azurite, tmp_path: Path) -> None:
    """A submit redelivered across the upgrade binds to the job it created; another spec is still refused."""
    backend = make_backend(storage.connection_string, tmp_path / "local")
    job = spec("legacy", WRITER)
    backend.submit(job)
    job_dir = tmp_path / "local" / "jobs" / "haste-legacy"
    wait_for(lambda: (job_dir / "state" / "exit.json").exists())
    stored = read_json(job_dir / "spec.json") or {}
    write_json(job_dir / "spec.json", {**stored, "fingerprint": legacy_fingerprint(job)})
    try:
        assert backend.status(backend.submit(job)).state is ComputeState.SUCCEEDED
        assert len((job_dir / "state" / "launches.log").read_text().splitlines()) == 1
        with pytest.raises(TerminalBackendError, match="A different local job"):
            backend.submit(spec("legacy", SLEEPER))
    finally:
        backend.close()


def test_two_worker_processes_upload_an_ended_job_once(storage: Azurite, tmp_path: Path) -> None:
    """A delivery in another process waits for the upload under way, then finds it done (and cleaned up)."""
    first = make_backend(storage.connection_string, tmp_path / "local")
    second = make_backend(storage.connection_string, tmp_path / "local")  # another worker's adapter
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
