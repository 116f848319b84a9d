"""A running task's stdout by run and byte range from the node (ocp-range through the real BatchClient), and the
blob copy that keeps what a reader got of each run (docs/adr/0045)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.azure_batch import logcopy
from hastegeo.compute.azure_batch.adapter import BatchBackend
from hastegeo.compute.azure_batch.errors import BATCH_ERRORS
from hastegeo.compute.azure_batch.streams import TaskStreams
from hastegeo.compute.contract import ComputeJobHandle, StreamRead
from hastegeo.compute.logposition import run_copy
from hastegeo.compute.retry import ProviderCalls, RetryBudget, RetryPolicy
from tests.integration.azure_batch.conftest import Rig

pytestmark = pytest.mark.azurite

# Prints two lines, waits for a file in its task directory, prints a third; again for a fourth.
WAITS = (
    "import os, pathlib, sys, time\n"
    "here = pathlib.Path(os.environ['AZ_BATCH_TASK_DIR'])\n"
    "def wait(name):\n"
    "    while not (here / name).exists(): time.sleep(0.05)\n"
    "sys.stdout.write('one\\ntwo\\n'); sys.stdout.flush(); wait('go')\n"
    "sys.stdout.write('three\\n'); sys.stdout.flush(); wait('again')\n"
    "sys.stdout.write('four\\n')"
)
STDOUT = "logs/stdout.txt"


def tail(
    backend: BatchBackend, handle: ComputeJobHandle, offset: int, *, run: int = 0, path: str = STDOUT
) -> bytes | None:
    read = backend.read_stream(handle, path, run, offset, 64 * 1024)
    return None if read is None else read.data


def running(rig: Rig, name: str) -> tuple[BatchBackend, ComputeJobHandle]:
    backend = rig.make()
    handle = backend.submit(rig.spec(name, code=WAITS))
    until(lambda: tail(backend, handle, 0) == b"one\ntwo\n", "the task never printed")
    return backend, handle


def until(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def touch(rig: Rig, handle: ComputeJobHandle, *names: str) -> None:
    task = rig.service.task(handle.provider_ids["job_id"], handle.provider_ids["task_id"])
    assert task.task_dir is not None
    for name in names:
        (task.task_dir / name).touch()


def test_stdout_by_byte_range_from_the_node_while_the_task_runs(rig: Rig) -> None:
    backend, handle = running(rig, "tail-1")
    assert tail(backend, handle, 4) == b"two\n"
    assert backend.read_stream(handle, STDOUT, 0, 4, 2) == StreamRead(run=0, data=b"tw")
    assert tail(backend, handle, 8) == b""  # nothing new: not an error
    assert tail(backend, handle, 0, path="logs/stderr.txt") is None  # empty: the blob copy is asked
    assert backend.read_stream(handle, "logs/progress.log", 0, 0, 10) is None  # only the streams
    calls = rig.service.calls(handle.provider_ids["job_id"])
    touch(rig, handle, "go", "again")
    rig.wait(handle)
    assert tail(backend, handle, 8) == b"three\nfour\n"
    assert rig.sleeps == []  # a node that does not answer is never waited on
    assert calls["get_task_file"] >= 5


def test_what_readers_got_is_kept_in_the_runs_blob_copy_and_the_final_upload_is_the_streams_own(rig: Rig) -> None:
    backend, handle = running(rig, "tail-2")
    copy = handle.output.child(run_copy("azure_batch", 0, STDOUT))
    assert rig.blob(copy) == b"one\ntwo\n"
    tail(backend, handle, 4)  # a later reader: nothing the copy lacks
    assert rig.blob(copy) == b"one\ntwo\n"
    rig.service.lose_node(handle.provider_ids["job_id"])
    assert backend.read_stream(handle, STDOUT, 0, 0, 100) == StreamRead(run=0)  # NodeNotFound: the copy answers
    touch(rig, handle, "go", "again")
    rig.wait(handle)
    assert rig.blob(handle.output.child(STDOUT)) == b"one\ntwo\nthree\nfour\n"  # Batch's upload at completion
    assert rig.blob(copy) == b"one\ntwo\n"  # the run's copy is left alone


def test_a_requeued_task_serves_only_the_run_a_reader_asks_for(rig: Rig) -> None:
    rig.service.faults.preempt_on_output("three", path="../stdout.txt", notice_s=0.5)
    backend, handle = running(rig, "tail-3")
    touch(rig, handle, "go")  # run 0 prints "three": its node is preempted, the task requeued
    until(lambda: (backend.read_stream(handle, STDOUT, 0, 8, 100) or StreamRead()).run == 1, "never requeued")
    over = backend.read_stream(handle, STDOUT, 0, 8, 100)
    assert over == StreamRead(run=1, why="requeued onto another node")  # run 0's bytes are not served as run 1's
    until(lambda: tail(backend, handle, 0, run=1) == b"one\ntwo\n", "the second run never printed")
    assert rig.blob(handle.output.child(run_copy("azure_batch", 1, STDOUT))) == b"one\ntwo\n"
    assert rig.blob(handle.output.child(run_copy("azure_batch", 0, STDOUT))) == b"one\ntwo\n"
    touch(rig, handle, "go", "again")
    rig.wait(handle)
    assert tail(backend, handle, 8, run=1) == b"three\nfour\n"
    assert tail(backend, handle, 8, run=0) is None


def test_a_read_across_the_change_of_run_is_dropped() -> None:
    """The node answered, but the task was requeued meanwhile: the bytes may be either run's, so none go out."""

    class Task:
        def __init__(self, requeues: int) -> None:
            self.state = "running"
            self.execution_info = type(
                "Info",
                (),
                {
                    "requeue_count": requeues,
                    "retry_count": 0,
                    "last_requeue_time": datetime.now(UTC) if requeues else None,
                    "last_retry_time": None,
                },
            )()

    runs = iter([Task(0), Task(1)])
    client = type(
        "Client",
        (),
        {
            "get_task": lambda self, job, task: next(runs),
            "download_task_file": lambda self, *args, **kwargs: iter([b"bytes of some run"]),
        },
    )()
    calls = ProviderCalls(RetryPolicy(RetryBudget(1, 0, 0), BATCH_ERRORS, lambda _: None))
    streams = TaskStreams(client, calls, blobs=None)
    handle = ComputeJobHandle(backend="azure_batch", provider_ids={}, submitted_at=datetime.now(UTC))
    assert streams.read(handle, "j", "t", STDOUT, 0, 0, 100) == StreamRead(run=1, why="requeued onto another node")


def test_the_copy_is_contiguous_conditional_and_never_touches_a_final_upload(rig: Rig) -> None:
    blobs: BlobServiceClient = rig.blobs
    copy = blobs.get_blob_client(rig.container, "a/logs/stdout.txt")
    logcopy.keep(blobs, rig.container, "a/logs/stdout.txt", 5, b"later")  # a gap: nothing written
    assert copy.download_blob().readall() == b""
    logcopy.keep(blobs, rig.container, "a/logs/stdout.txt", 0, b"abc")
    logcopy.keep(blobs, rig.container, "a/logs/stdout.txt", 1, b"bcdef")  # overlaps: only what is new
    assert copy.download_blob().readall() == b"abcdef"
    final = blobs.get_blob_client(rig.container, "b/logs/stdout.txt")
    final.upload_blob(b"whole file\n")
    logcopy.keep(blobs, rig.container, "b/logs/stdout.txt", 0, b"whole file\nand more")
    assert final.download_blob().readall() == b"whole file\n"
