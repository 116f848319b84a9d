"""A pipeline runtime wired to the session's Azurite, isolated per test by container names."""

from __future__ import annotations

import time
from typing import Any

from hastegeo.models.job import Job
from hastegeo.runtime import Runtime
from hastegeo.store.queues import JobMessage


def drive(runtime: Runtime, job_id: str, timeout: float = 30.0) -> Job:
    """Run the poll step by hand until the job ends (the queues are not consumed here)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = runtime.store.get(job_id)
        if job.state.terminal:
            return job
        runtime.poll.handle(JobMessage(job_id=job_id, kind="poll", poll_seq=job.poll_seq))
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end within {timeout}s: {runtime.store.get(job_id).state}")


def put_input(runtime: Runtime, name: str, data: bytes) -> None:
    container = runtime.blobs.get_container_client(runtime.settings.storage.inputs_container)
    container.upload_blob(name, data, overwrite=True)


def request(**fields: Any) -> dict[str, Any]:
    return {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}], **fields}
