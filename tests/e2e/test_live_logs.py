"""A running job's stdout through the API and the CLI on every backend (docs/adr/0045).

The real app in an in-process host on Azurite, with the three backends enabled: the local backend runs
the workload as a process, the Batch test service runs it as a task through the real ``BatchClient``, and
the Azure ML stand-in plays the service whose run history lists the job's log (the test writes it, as the
job's command would). The workload prints a few lines, one with a storage key, then waits for the test
before it prints the rest: the reads while it waits are reads of a running job.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient, ContainerClient

from hastegeo.cli.client import ApiClient
from hastegeo.cli.main import main
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec
from hastegeo.models.job import Job
from hastegeo.runtime import ensure_storage, get_runtime, reset_runtime
from hastegeo.settings.load import get_settings
from hastegeo.workloads.processor import SpecInputs
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.devhost.functions import load_app
from hastegeo_dev.devhost.host import DevHost
from hastegeo_dev.devhost.queue_driver import DriverOptions
from hastegeo_dev.testing.aml_standin import StandInMLClient
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.support.aml import AML_SETTINGS, route_to_standin
from tests.support.processors import SUCCEED, ScriptProcessor
from tests.support.storage import isolated_storage

pytestmark = [pytest.mark.azurite]
REPO = Path(__file__).resolve().parents[2]
KEY = "c2VjcmV0LWtleS10aGF0LW11c3Qtbm90LWxlYWs="
FIRST = f"line 1\nline 2\nconnecting with DefaultEndpointsProtocol=https;AccountName=a;AccountKey={KEY}\nline 3\n"
REST = "line 4\nline 5\ndone\n"
SIGNATURE = "c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw%3D"
ERR = f"fetching https://acct.blob.core.windows.net/in/a.tif?sv=2024-05-04&sr=b&sig={SIGNATURE}\n"


def workload(release: Path) -> str:
    """Prints FIRST (and ERR on stderr), waits until ``release`` exists, prints REST, and succeeds."""
    return (
        f"""
import os, pathlib, sys, time
sys.stdout.write({FIRST!r}); sys.stdout.flush()
sys.stderr.write({ERR!r}); sys.stderr.flush()
release = pathlib.Path({str(release)!r})
deadline = time.monotonic() + 60
while not release.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
sys.stdout.write({REST!r}); sys.stdout.flush()
"""
        + SUCCEED
    )


class Printing(ScriptProcessor):
    """The script processor with the workload above."""

    def __init__(self, release: Path) -> None:
        self.release = release

    def build_spec(self, job: Job, where: SpecInputs, output: BlobLocation) -> ComputeJobSpec:
        spec = super().build_spec(job, where, output)
        return spec.model_copy(update={"entrypoint": ("python", "-c", workload(self.release))})


@dataclass
class Stack:
    base_url: str
    client: ApiClient
    batch: BatchTestService
    standin: StandInMLClient
    blobs: BlobServiceClient
    logs: ContainerClient  # where the Azure ML stand-in keeps its run logs
    inputs: str
    release: Path


@pytest.fixture
def stack(azurite: Azurite, clean_env: pytest.MonkeyPatch, unique: str, tmp_path: Path) -> Iterator[Stack]:
    batch = BatchTestService(azurite.connection_string).start()
    settings = {
        **isolated_storage(azurite.connection_string, unique),
        "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
        "HASTE_BACKENDS_ENABLED": "local,azure_batch,azure_ml",
        "HASTE_POLL_INITIAL_S": "1",
        "HASTE_POLL_MAX_S": "1",
        **batch.settings(("artifacts",)),
        **AML_SETTINGS,
        "AML_RETRY_DELAY_S": "0.1",
        "HASTE_DEV_PRINCIPAL": "name=logs-e2e@example.com;roles=Haste.Submitter;projects=p1",
    }
    for key, value in settings.items():
        clean_env.setenv(key, value)
    standin = StandInMLClient()
    route_to_standin(clean_env, standin)
    get_settings.cache_clear()
    reset_runtime()
    ensure_storage(get_settings())
    release = tmp_path / "release"
    runtime = get_runtime()
    for pipeline in (runtime, runtime.api):
        pipeline.deps.processors["artifacts"] = Printing(release)
    blobs = BlobServiceClient.from_connection_string(azurite.connection_string)
    logs = blobs.get_container_client(f"azureml-{unique}")
    logs.create_container()
    options = DriverOptions(lease_seconds=5, stop_grace=1.0)
    host = DevHost(load_app("function_app:app", REPO), app_dir=REPO, port=0, driver_options=options).start()
    try:
        yield Stack(
            host.base_url,
            ApiClient(host.base_url, timeout=10),
            batch,
            standin,
            blobs,
            logs,
            settings["HASTE_INPUTS_CONTAINER"],
            release,
        )
    finally:
        release.touch()
        host.stop(timeout=3)
        batch.stop()
        reset_runtime()
        get_settings.cache_clear()


def until(read: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not done(value := read()):
        if time.monotonic() > deadline:
            raise AssertionError(f"still {value} after {timeout}s")
        time.sleep(0.1)
    return value


def submit(stack: Stack, backend: str) -> str:
    stack.blobs.get_blob_client(stack.inputs, "p1/a.txt").upload_blob(b"alpha", overwrite=True)
    request = {"workload": "artifacts", "projectId": "p1", "backend": backend, "inputs": [{"blob": "p1/a.txt"}]}
    return str(stack.client.submit(request)["id"])


def follow_with_the_cli(stack: Stack, job_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    return with_the_cli(stack, job_id, capsys, "--stdout", "--follow")


def with_the_cli(stack: Stack, job_id: str, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["logs", job_id, *options, "--url", stack.base_url, "--output", "table"])
    return code, capsys.readouterr().out


def assert_redacted(text: str) -> None:
    assert KEY not in text
    assert "c2VjcmV0" not in text
    assert "AccountKey=[REDACTED]" in text


def read_while_running(stack: Stack, job_id: str) -> dict[str, Any]:
    """stdout of the running job: its first lines, whole, the key redacted, read again from the offset."""
    part = until(lambda: stack.client.logs(job_id, "stdout", 0), lambda p: "line 3\n" in p["text"])
    assert part["state"] == "running"
    assert not part["ended"]
    assert part["text"] == FIRST.replace(KEY, "[REDACTED]")
    assert part["nextOffset"] == len(FIRST.encode())  # bytes of the log, not characters of the redacted text
    again = stack.client.logs(job_id, "stdout", part["nextOffset"])
    assert (again["text"], again["nextOffset"], again["ended"]) == ("", part["nextOffset"], False)
    middle = stack.client.logs(job_id, "stdout", len(b"line 1\n"))  # any offset a reader kept
    assert middle["text"].startswith("line 2\n")
    return dict(part)


@pytest.mark.parametrize("backend", ["local", "azure_batch"])
def test_a_running_jobs_stdout_by_offset_through_the_api_and_the_cli(
    stack: Stack, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = submit(stack, backend)
    part = read_while_running(stack, job_id)
    assert part["source"] == "backend"  # the local file, or the Batch node by byte range
    # The CLI reads the running job too: what there is now, then it stops (no --follow).
    assert with_the_cli(stack, job_id, capsys, "--stdout") == (0, FIRST.replace(KEY, "[REDACTED]"))
    code, err = with_the_cli(stack, job_id, capsys, "--stderr")
    assert (code, err) == (0, ERR.replace(SIGNATURE, "[REDACTED]"))
    assert stack.client.logs(job_id, "stderr", 0)["text"] == err
    stack.release.touch()
    code, printed = follow_with_the_cli(stack, job_id, capsys)
    assert code == 0
    assert printed == (FIRST + REST).replace(KEY, "[REDACTED]")
    ended = stack.client.logs(job_id, "stdout", part["nextOffset"])
    assert ended["ended"]
    assert ended["state"] == "succeeded"
    assert ended["text"] == REST
    # After its end the blob copy answers too (the local files are cleaned up; Batch uploaded the streams).
    if backend == "local":
        assert ended["source"] == "blob"


def test_a_batch_node_gone_mid_job_leaves_the_blob_copy_to_answer(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = submit(stack, "azure_batch")
    part = read_while_running(stack, job_id)
    (batch_job,) = stack.batch.engine.jobs
    stack.batch.lose_node(batch_job)
    gone = stack.client.logs(job_id, "stdout", 0)
    assert gone["source"] == "blob"
    assert gone["state"] == "running"
    assert (gone["text"], gone["nextOffset"]) == (part["text"], part["nextOffset"])  # what readers got, kept
    assert stack.client.logs(job_id, "stdout", part["nextOffset"])["text"] == ""
    stack.release.touch()
    code, printed = follow_with_the_cli(stack, job_id, capsys)
    assert code == 0
    assert printed == (FIRST + REST).replace(KEY, "[REDACTED]")


def test_an_azure_ml_jobs_log_by_offset_through_the_api_and_the_cli(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    job_id = submit(stack, "azure_ml")
    name = f"haste-{job_id}"
    until(lambda: {"known": name in stack.standin.state.jobs}, lambda seen: bool(seen["known"]))
    stack.standin.set_status(name, "Running")
    until(lambda: stack.client.get(job_id), lambda job: job["state"] == "running")
    nothing = stack.client.logs(job_id, "stdout", 0)  # no log listed yet: nobody has one
    assert (nothing["text"], nothing["nextOffset"], nothing["ended"]) == ("", 0, False)
    head, tail = FIRST.encode()[:50], FIRST.encode()[50:]  # the key's line arrives in two writes
    stack.standin.write_log(name, head, stack.logs)
    first = stack.client.logs(job_id, "stdout", 0)
    assert first["text"] == "line 1\nline 2\n"
    assert first["source"] == "backend"
    stack.standin.write_log(name, tail, stack.logs)
    part = read_while_running(stack, job_id)
    assert part["source"] == "backend"
    assert with_the_cli(stack, job_id, capsys, "--stdout") == (0, FIRST.replace(KEY, "[REDACTED]"))
    assert stack.client.logs(job_id, "stderr", 0)["text"] == part["text"]  # one log holds both streams
    stack.standin.write_log(name, REST.encode() + b"exit 0", stack.logs)
    stack.standin.set_status(name, "Failed", error=("UserError", "no outputs were written"))
    code, printed = follow_with_the_cli(stack, job_id, capsys)
    assert code == 1  # the job failed: the CLI exits as watch does
    assert printed == (FIRST + REST).replace(KEY, "[REDACTED]") + "exit 0"  # its last line, once it ended
    assert_redacted(printed)


CHECKPOINT = "checkpoint saved\n"


class PrintsThenWaits(Printing):
    """Prints FIRST, waits for ``release``, prints CHECKPOINT, waits for ``release`` + "2", prints REST."""

    def build_spec(self, job: Job, where: SpecInputs, output: BlobLocation) -> ComputeJobSpec:
        spec = super().build_spec(job, where, output)
        waits = workload(self.release).replace(
            f"sys.stdout.write({REST!r})",
            f"sys.stdout.write({CHECKPOINT!r}); sys.stdout.flush()\n"
            f"release = pathlib.Path({str(self.release) + '2'!r})\n"
            "while not release.exists():\n    time.sleep(0.05)\n"
            f"sys.stdout.write({REST!r})",
        )
        return spec.model_copy(update={"entrypoint": ("python", "-c", waits)})


def test_a_follower_neither_misses_nor_repeats_a_line_when_the_batch_task_is_requeued(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    """The node is preempted mid-job: the second run's stdout starts from nothing, the offsets go on."""
    runtime = get_runtime()
    for pipeline in (runtime, runtime.api):
        pipeline.deps.processors["artifacts"] = PrintsThenWaits(stack.release)
    stack.batch.faults.preempt_on_output(CHECKPOINT, path="../stdout.txt", notice_s=0.2)
    job_id = submit(stack, "azure_batch")
    first = read_while_running(stack, job_id)
    capsys.readouterr()
    pool = ThreadPoolExecutor(1)  # the CLI follows across the requeue, from the start
    follower = pool.submit(main, ["logs", job_id, "--stdout", "--follow", "--url", stack.base_url, "--output", "table"])
    stack.release.touch()  # the first run prints CHECKPOINT, and its node is preempted at once
    (batch_job,) = stack.batch.engine.jobs
    until(lambda: {"requeues": stack.batch.task(batch_job, batch_job).requeue_count}, lambda seen: seen["requeues"] > 0)
    crossing = stack.client.logs(job_id, "stdout", first["nextOffset"])
    separator = "--- attempt 2 (requeued onto another node) ---\n"
    # The separator, after the first run's last line when the CLI got it from the node before it went.
    assert crossing["text"] in {separator, CHECKPOINT + separator}
    second = crossing["nextOffset"]
    assert second > first["nextOffset"]  # a position of the second run: offsets only grow
    until(lambda: stack.client.logs(job_id, "stdout", second), lambda p: CHECKPOINT in p["text"])
    (stack.release.parent / (stack.release.name + "2")).touch()
    # A follower goes on from there: the second run's whole output, once, and the end.
    text, part = [], {"nextOffset": second, "ended": False}
    while not part["ended"]:
        at = part["nextOffset"]
        part = until(lambda at=at: stack.client.logs(job_id, "stdout", at), lambda p: p["text"] or p["ended"])
        text.append(part["text"])
    second_run = "".join(text)
    assert second_run == (FIRST + CHECKPOINT + REST).replace(KEY, "[REDACTED]")
    # The CLI that followed all along printed each line once: the first run's, the separator, the second's.
    assert follower.result(timeout=30) == 0
    pool.shutdown()
    followed = capsys.readouterr().out
    assert followed == first["text"] + crossing["text"] + second_run
    # A reader that starts at 0 after the end reads the same, from what was kept of the first run.
    code, printed = follow_with_the_cli(stack, job_id, capsys)
    assert code == 0
    assert printed == followed
    assert_redacted(printed)


def test_an_azure_ml_jobs_stdout_and_stderr_are_read_apart_once_its_runtime_writes_them(stack: Stack) -> None:
    job_id = submit(stack, "azure_ml")
    name = f"haste-{job_id}"
    until(lambda: {"known": name in stack.standin.state.jobs}, lambda seen: bool(seen["known"]))
    stack.standin.set_status(name, "Running")
    until(lambda: stack.client.get(job_id), lambda job: job["state"] == "running")
    stack.standin.write_log(name, (FIRST + ERR).encode(), stack.logs)  # run history's one log: both streams
    outputs = get_settings().storage.outputs_container
    for stream, text in (("stdout", FIRST), ("stderr", ERR)):  # as the job's command writes them through its mount
        stack.blobs.get_blob_client(outputs, f"jobs/{job_id}/logs/{stream}.txt").upload_blob(text.encode())
    out = stack.client.logs(job_id, "stdout", 0)
    err = stack.client.logs(job_id, "stderr", 0)
    assert (out["text"], out["source"]) == (FIRST.replace(KEY, "[REDACTED]"), "backend")
    assert (err["text"], err["source"]) == (ERR.replace(SIGNATURE, "[REDACTED]"), "backend")
