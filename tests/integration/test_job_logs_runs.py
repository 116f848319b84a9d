"""A job's log read across its runs and backends: one offset for its whole life (docs/adr/0045).

The blob copies are real blobs in Azurite; the backend is a small stand-in that answers
``read_stream`` the way an adapter does (which run is under way, and that run's bytes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient, ContainerClient

from hastegeo.compute.contract import BlobLocation, ComputeJobHandle, StreamRead
from hastegeo.compute.logposition import RUN_SPAN, Position, run_copy
from hastegeo.costs.usage import JobUsage
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.logs import JobLogs
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
STDOUT = "logs/stdout.txt"


@dataclass
class Backend:
    """Answers like an adapter: the run under way, and the asked run's bytes while it is the current one."""

    run: int = 0
    why: str | None = None
    runs: dict[int, bytes] = field(default_factory=dict)
    tellable: bool = True

    def read_stream(self, handle: ComputeJobHandle, path: str, run: int, offset: int, limit: int) -> StreamRead | None:
        if not self.tellable:
            return None
        data = self.runs[run][offset : offset + limit] if run == self.run and run in self.runs else None
        return StreamRead(run=self.run, why=self.why, data=data)


CONTAINER = "job-logs-runs"
OUTPUT = BlobLocation(container=CONTAINER, path="jobs/j1")


@pytest.fixture
def blobs(azurite: Azurite) -> Iterator[BlobServiceClient]:
    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    service.create_container(CONTAINER)
    yield service
    service.delete_container(CONTAINER)


@pytest.fixture
def container(blobs: BlobServiceClient) -> ContainerClient:
    return blobs.get_container_client(CONTAINER)


def logs(container: ContainerClient, backend: Backend, window: int = 64 * 1024) -> JobLogs:
    service: Any = backend
    blobs = BlobServiceClient(container.url.rsplit("/", 1)[0], credential=container.credential)
    return JobLogs(service, blobs, lambda _: OUTPUT, window=window)


def job(state: JobState, backend: str = "azure_batch", *, left: tuple[str, ...] = (), runs: int = 0) -> Job:
    output = OUTPUT
    handle = ComputeJobHandle(backend=backend, provider_ids={"job_id": "j1"}, output=output, submitted_at=NOW)
    usage = JobUsage(counted={backend: runs}) if runs else None
    return Job(id="j1", project_id="p1", workload="artifacts", state=state, requested_backend="auto",
               backend=backend, backends_left=list(left), handle=handle, usage=usage, created_at=NOW,
               updated_at=NOW, deadline_at=NOW)  # fmt: skip


def put(container: ContainerClient, name: str, data: bytes) -> None:
    container.get_blob_client(f"jobs/j1/{name}").upload_blob(data, overwrite=True)


def follow(reader: JobLogs, current: Job, offset: int = 0) -> tuple[str, int]:
    text = []
    for _ in range(50):
        page = reader.read(current, "stdout", offset)
        text.append(page.text)
        if page.ended or page.next_offset == offset:
            return "".join(text), page.next_offset
        offset = page.next_offset
    raise AssertionError("the log never ended")


def test_a_reader_at_the_end_of_a_run_that_is_over_gets_its_rest_a_separator_and_the_next_run(
    container: ContainerClient,
) -> None:
    put(container, run_copy("azure_batch", 0, STDOUT), b"one\ntwo\nthr")  # what readers got from the lost node
    backend = Backend(run=1, why="requeued onto another node", runs={1: b"one\n"})
    reader = logs(container, backend)
    running = job(JobState.RUNNING)
    page = reader.read(running, "stdout", 4)
    assert page.text == "two\nthr\n--- attempt 2 (requeued onto another node) ---\n"
    assert page.next_offset == Position(0, 1, 0).offset == RUN_SPAN
    assert not page.ended
    assert reader.read(running, "stdout", 8).text == "thr\n--- attempt 2 (requeued onto another node) ---\n"
    assert reader.read(running, "stdout", 11).text == "\n--- attempt 2 (requeued onto another node) ---\n"
    second = reader.read(running, "stdout", RUN_SPAN)
    assert (second.text, second.next_offset, second.source) == ("one\n", RUN_SPAN + 4, "backend")
    assert follow(reader, running) == (
        "one\ntwo\nthr\n--- attempt 2 (requeued onto another node) ---\none\n",
        RUN_SPAN + 4,
    )


def test_after_the_end_the_last_run_is_the_streams_own_upload_and_earlier_runs_their_copies(
    container: ContainerClient,
) -> None:
    put(container, run_copy("azure_batch", 0, STDOUT), b"first run\n")
    put(container, STDOUT, b"second run\nlast words")  # Batch's upload at completion: the last run's file
    backend = Backend(tellable=False)  # the Batch job is gone: the job's own record counts the runs
    ended = job(JobState.SUCCEEDED, runs=2)
    text, end = follow(logs(container, backend), ended)
    assert text == "first run\n--- attempt 2 (the task ran again) ---\nsecond run\nlast words"
    assert end == RUN_SPAN + len(b"second run\nlast words")


def test_a_job_moved_to_another_backend_goes_on_from_what_the_backend_it_left_kept(
    container: ContainerClient,
) -> None:
    put(container, run_copy("azure_batch", 0, STDOUT), b"on batch\n")
    backend = Backend(run=0, runs={0: b"on azure ml\n"})
    moved = job(JobState.RUNNING, "azure_ml", left=("azure_batch",))
    text, end = follow(logs(container, backend), moved)
    assert text == "on batch\n--- moved from azure_batch to azure_ml (its output starts again) ---\non azure ml\n"
    assert Position.of(end) == Position(1, 0, len(b"on azure ml\n"))
    # A backend that kept nothing (the local backend keeps its files on its machine): straight to the next.
    empty = job(JobState.RUNNING, "azure_ml", left=("local",))
    page = logs(container, backend).read(empty, "stdout", 120)
    assert page.text == "--- moved from local to azure_ml (its output starts again) ---\n"
    assert page.next_offset == Position(1, 0, 0).offset
    # A position of no stage yet is nothing, not an error.
    assert logs(container, backend).read(moved, "stdout", Position(5, 0, 0).offset).text == ""


def test_a_run_that_is_over_hands_out_its_rest_a_window_at_a_time_before_the_separator(
    container: ContainerClient,
) -> None:
    put(container, run_copy("azure_batch", 0, STDOUT), b"a\nb\nc\nd\n")
    reader = logs(container, Backend(run=1), window=4)
    running = job(JobState.RUNNING)
    assert [reader.read(running, "stdout", offset).text for offset in (0, 4)] == [
        "a\nb\n",
        "c\nd\n--- attempt 2 (the task ran again) ---\n",
    ]
