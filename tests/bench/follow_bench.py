"""What following one running Batch or Azure ML job costs in storage calls, from minute 10 to minute 70 of its run.

Measured end to end, not from the cadence's arithmetic (issue 40; ADR 0041): a real job is
submitted through the acceptor and the submit step to the Batch test service (through the
real ``BatchClient``) or the Azure ML stand-in (through the real ``azure-ai-ml`` entities), on
Azurite, and held running: the Batch task's process is stopped the moment it starts (the
service reports it running, as Batch does for a long task), the Azure ML run is set
``Running``. The pipeline's clock is then moved to each poll's due time, which the chain wrote
into the job's document, and the real poll step is run: the provider is asked, the document
written, the due entry moved when it crosses a bucket, the next message sent. Every storage call
is counted (``storage_calls``), plus the Functions host's receive and delete of each message,
which no step makes itself.

The reconciler's pass is shared by every running job (≤ 10 calls with none due, whatever their
number: ``scale_bench``), so per job it is that figure over the running jobs, added by the
report that prints these rows.

Run: ``python -m tests.bench.follow_bench`` (part of ``make bench-scale``).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import POLL_QUEUE, JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.testing.aml_standin import StandInMLClient
from hastegeo_dev.testing.batch_service import BatchTestService
from tests.bench import storage_calls
from tests.support.aml import AML_SETTINGS
from tests.support.runtime import development_runtime

FROM_MIN, TO_MIN = 10, 70  # "once they have run for ten minutes", over the hour after
HOST_CALLS = 2  # the host's receive and delete of each poll message


@dataclass(frozen=True)
class FollowCost:
    backend: str
    polls: int
    calls: int  # the polls' own, the host's receive and delete, the due entry's moves
    minutes: float

    @property
    def calls_per_minute(self) -> float:
        return self.calls / self.minutes

    @property
    def polls_per_minute(self) -> float:
        return self.polls / self.minutes


class Clock:
    """The pipeline's clock, moved by the bench: a poll's due time arrives at once."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@contextmanager
def batch(azurite: Azurite, clock: Clock) -> Iterator[tuple[Runtime, Callable[[str], None]]]:
    service = BatchTestService(azurite.connection_string).start()
    env = {
        "AzureWebJobsStorage": azurite.connection_string,
        "HASTE_BACKENDS_ENABLED": "azure_batch",
        "BATCH_ACCOUNT_URL": service.url,
        "BATCH_AUTH_MODE": "shared_key",
        "BATCH_ACCOUNT_NAME": service.account_name,
        "BATCH_ACCOUNT_KEY": service.account_key,
        "BATCH_POOLS": "artifacts=cpu-pool",
        "BATCH_IMAGES": "artifacts=haste/geo:1",
        "BATCH_IDENTITY_RESOURCE_ID": "/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/x",
    }
    runtime = development_runtime(load_settings(env), clock=clock, sleep=lambda _: None)

    def hold(job_id: str) -> None:  # the task's process stopped as soon as it exists: running, for as long as we like
        handle = runtime.store.get(job_id).handle
        assert handle is not None
        task = service.task(handle.provider_ids["job_id"], handle.provider_ids["task_id"])
        deadline = time.monotonic() + 30
        while task.process is None:
            if time.monotonic() > deadline:
                raise AssertionError("the Batch test service never started the task")
            time.sleep(0.002)
        os.kill(task.process.pid, signal.SIGSTOP)

    try:
        yield runtime, hold
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()
        service.stop()  # kills the stopped process too


@contextmanager
def azure_ml(azurite: Azurite, clock: Clock) -> Iterator[tuple[Runtime, Callable[[str], None]]]:
    from hastegeo.compute.azure_ml.adapter import create

    standin = StandInMLClient()
    env = {"AzureWebJobsStorage": azurite.connection_string, "HASTE_BACKENDS_ENABLED": "azure_ml", **AML_SETTINGS}
    factories: dict[str, Any] = {"azure_ml": lambda context: create(context, client_factory=lambda _s: standin)}
    runtime = development_runtime(load_settings(env), factories=factories, clock=clock, sleep=lambda _: None)
    try:
        yield runtime, lambda job_id: standin.set_status(f"haste-{job_id}", "Running")
    finally:
        for adapter in runtime.registry.built().values():
            adapter.close()


def follow(backend: str, azurite: Azurite) -> FollowCost:
    """One job held running on ``backend``; its polls from minute FROM_MIN to TO_MIN of its run, counted."""
    clock = Clock()
    stack = batch if backend == "azure_batch" else azure_ml
    with stack(azurite, clock) as (runtime, hold):
        inputs = runtime.blobs.get_container_client(runtime.settings.storage.inputs_container)
        inputs.upload_blob("follow/a.txt", b"alpha", overwrite=True)
        body = {
            "workload": "artifacts",
            "projectId": "follow",
            "backend": backend,
            "inputs": [{"blob": "follow/a.txt"}],
        }
        job_id = runtime.acceptor.accept(parse_request(body)).job.id
        runtime.submit.handle(JobMessage(job_id=job_id, kind="submit"))
        hold(job_id)
        started, polls, calls = clock.now, 0, 0
        while True:
            job = runtime.store.get(job_id)
            if job.state.terminal:
                raise AssertionError(f"the held {backend} job ended: {job.reason}")
            assert job.poll_due_at is not None, "a running job always has its next poll due"
            clock.now = max(clock.now, job.poll_due_at)
            minute = (clock.now - started) / timedelta(minutes=1)
            if minute > TO_MIN:
                break
            before = storage_calls.total()
            runtime.poll.handle(JobMessage(job_id=job_id, kind="poll", poll_seq=job.poll_seq))
            if minute >= FROM_MIN:
                polls, calls = polls + 1, calls + storage_calls.total() - before + HOST_CALLS
        if runtime.store.get(job_id).state.value != "running":
            raise AssertionError(f"the held {backend} job is not running: its polls are no running job's")
        runtime.queues.client(POLL_QUEUE).clear_messages()
        return FollowCost(backend, polls, calls, TO_MIN - FROM_MIN)


def measure() -> list[FollowCost]:
    storage_calls.install()
    with Azurite(in_memory=True) as azurite:
        return [follow(backend, azurite) for backend in ("azure_batch", "azure_ml")]


def main() -> int:
    costs = measure()
    print(f"following one running job, minute {FROM_MIN} to {TO_MIN} of its run (measured, end to end):")
    for cost in costs:
        print(
            f"  {cost.backend:<12} {cost.polls} polls, {cost.calls} storage calls:"
            f" {cost.calls_per_minute:.2f} calls and {cost.polls_per_minute:.3f} poll messages a minute"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
