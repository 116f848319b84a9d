"""A running task's stdout by byte range from the node (ocp-range through the real BatchClient), and the blob copy
that keeps what a reader got of it (docs/adr/0045)."""

from __future__ import annotations

import time

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.azure_batch import logcopy
from hastegeo.compute.azure_batch.adapter import BatchBackend
from hastegeo.compute.contract import ComputeJobHandle
from tests.integration.azure_batch.conftest import Rig

pytestmark = pytest.mark.azurite

# Prints two lines, waits for a file next to its working directory, prints a third.
WAITS = (
    "import os, pathlib, sys, time; sys.stdout.write('one\\ntwo\\n'); sys.stdout.flush(); "
    "go = pathlib.Path(os.environ['AZ_BATCH_TASK_DIR']) / 'go'\n"
    "while not go.exists(): time.sleep(0.05)\n"
    "sys.stdout.write('three\\n')"
)


def running(rig: Rig, name: str) -> tuple[BatchBackend, ComputeJobHandle]:
    backend = rig.make()
    handle = backend.submit(rig.spec(name, code=WAITS))
    deadline = time.monotonic() + 20
    while backend.read_output_tail(handle, "logs/stdout.txt", 0) != b"one\ntwo\n":
        assert time.monotonic() < deadline, "the task never printed"
        time.sleep(0.05)
    return backend, handle


def release(rig: Rig, handle: ComputeJobHandle) -> None:
    task = rig.service.task(handle.provider_ids["job_id"], handle.provider_ids["task_id"])
    assert task.task_dir is not None
    (task.task_dir / "go").touch()


def test_stdout_by_byte_range_from_the_node_while_the_task_runs(rig: Rig) -> None:
    backend, handle = running(rig, "tail-1")
    assert backend.read_output_tail(handle, "logs/stdout.txt", 4) == b"two\n"
    assert backend.read_output_tail(handle, "logs/stdout.txt", 4, limit=2) == b"tw"
    assert backend.read_output_tail(handle, "logs/stdout.txt", 8) == b""  # nothing new: not an error
    assert backend.read_output_tail(handle, "logs/stderr.txt", 0) is None  # empty: the blob copy is asked
    assert backend.read_output_tail(handle, "logs/progress.log", 0) is None  # only the streams, never a poll's file
    calls = rig.service.calls(handle.provider_ids["job_id"])
    release(rig, handle)
    rig.wait(handle)
    assert backend.read_output_tail(handle, "logs/stdout.txt", 8) == b"three\n"
    assert rig.sleeps == []  # a node that does not answer is never waited on
    assert calls["get_task_file"] >= 5


def test_what_readers_got_is_kept_in_the_blob_copy_and_the_final_upload_replaces_it(rig: Rig) -> None:
    backend, handle = running(rig, "tail-2")
    name = handle.output.child("logs/stdout.txt")
    assert rig.blob(name) == b"one\ntwo\n"
    backend.read_output_tail(handle, "logs/stdout.txt", 4)  # a later reader: nothing the copy lacks
    assert rig.blob(name) == b"one\ntwo\n"
    rig.service.lose_node(handle.provider_ids["job_id"])
    assert backend.read_output_tail(handle, "logs/stdout.txt", 0) is None  # NodeNotFound: the copy answers
    release(rig, handle)
    rig.wait(handle)
    assert rig.blob(name) == b"one\ntwo\nthree\n"  # Batch's upload at completion: the whole file


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
