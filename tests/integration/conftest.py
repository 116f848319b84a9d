"""A pipeline runtime wired to the session's Azurite, isolated per test by container names."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hastegeo.config import load_settings
from hastegeo.devhost.azurite import Azurite
from hastegeo.models.job import Job
from hastegeo.runtime import Runtime, build_runtime
from hastegeo.store.queues import JobMessage

RuntimeFactory = Callable[..., Runtime]


@pytest.fixture
def make_runtime(azurite: Azurite, tmp_path: Path, unique: str) -> Iterator[RuntimeFactory]:
    built: list[Runtime] = []

    def factory(**overrides: str) -> Runtime:
        env = {
            "AzureWebJobsStorage": azurite.connection_string,
            "HASTE_JOBS_CONTAINER": f"jobs-{unique}",
            "HASTE_OUTPUTS_CONTAINER": f"outputs-{unique}",
            "HASTE_INPUTS_CONTAINER": f"inputs-{unique}",
            "HASTE_LOCAL_ROOT": str(tmp_path / "local"),
            "HASTE_LOCAL_SLOTS": "2",
            "HASTE_POLL_INITIAL_S": "1",
            **overrides,
        }
        runtime = build_runtime(load_settings(env))
        built.append(runtime)
        return runtime

    yield factory
    for runtime in built:
        for adapter in runtime.registry.built().values():
            close = getattr(adapter, "close", None)
            if close is not None:
                close()


def drive(runtime: Runtime, job_id: str, timeout: float = 30.0) -> Job:
    """Run the poll step by hand until the job ends (the queues are not consumed here)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = runtime.store.get(job_id)
        if job.state.terminal:
            return job
        runtime.poll.handle(JobMessage(job_id=job_id, kind="poll", attempt=job.poll_seq))
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end within {timeout}s: {runtime.store.get(job_id).state}")


def put_input(runtime: Runtime, name: str, data: bytes) -> None:
    container = runtime.blobs.get_container_client(runtime.settings.storage.inputs_container)
    container.upload_blob(name, data, overwrite=True)


def request(**fields: Any) -> dict[str, Any]:
    return {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}], **fields}
