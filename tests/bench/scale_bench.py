"""``make bench-scale``: what the job store costs as finished jobs pile up.

For each size (cumulative: the store grows from one size to the next) the bench seeds
that many finished jobs beside 50 running ones in one project, then times, median of
``--repeat`` runs, through the real store and reconciler against Azurite:

- a reconciler pass (the timer's whole sweep);
- the first page of the project's jobs (what ``GET /api/jobs?projectId=`` reads);
- the first page filtered by ``state=running`` (the running jobs are the oldest, so a
  store that walked history would read every finished job first);
- one read of a job.

It prints the storage calls each operation made (counted at the azure-core
transport, :mod:`tests.bench.storage_calls`) and the ratio largest/smallest size
per operation; the goal is ≤ 2 (ADR 0011).

Seeding writes what the store itself writes for a finished job (its document, its
project-index entry and its ``ended/succeeded`` entry) straight over HTTP, with a
container SAS, from several threads on kept-alive connections: the SDK costs ~5 ms
of client CPU per call, which made 100,000 jobs take ~10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any
from urllib.parse import urlparse

from azure.storage.blob import ContainerSasPermissions, generate_container_sas

from hastegeo.config import load_settings
from hastegeo.devhost.azurite import ACCOUNT_KEY, ACCOUNT_NAME, Azurite
from hastegeo.models.history import make_event
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deps import new_job_id, record
from hastegeo.runtime import Runtime, build_runtime
from hastegeo.store import index
from hastegeo.store.jobs import JobStore
from tests.bench import storage_calls

PROJECT = "bench"
RUNNING = 50
GOAL_RATIO = 2.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def job_at(created: datetime, state: JobState) -> Job:
    return Job(
        id=new_job_id(),
        project_id=PROJECT,
        workload="artifacts",
        state=state,
        requested_backend="auto",
        backend="local",
        created_at=created,
        updated_at=created,
        deadline_at=created + timedelta(days=3650),
        history=[
            make_event(created, JobState.QUEUED, "accepted", "bench"),
            make_event(created, state, "done", "bench"),
        ],
    )


class Seeder:
    """PUTs blobs into one container over kept-alive HTTP connections, one per thread."""

    def __init__(self, container_url: str, container: str, threads: int) -> None:
        url = urlparse(container_url)
        self._host, self._port, self._path = url.hostname or "127.0.0.1", url.port or 80, url.path
        expiry = datetime.now(UTC) + timedelta(hours=2)
        permission = ContainerSasPermissions(write=True, create=True)
        self._sas = generate_container_sas(ACCOUNT_NAME, container, ACCOUNT_KEY, permission=permission, expiry=expiry)
        self._threads = threads
        self._local = threading.local()

    def _put(self, item: tuple[str, bytes, dict[str, str]]) -> None:
        name, body, headers = item
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = http.client.HTTPConnection(self._host, self._port, timeout=60)
        connection.request(
            "PUT",
            f"{self._path}/{name}?{self._sas}",
            body=body,
            headers={"x-ms-blob-type": "BlockBlob", "x-ms-version": "2025-01-05", **headers},
        )
        response = connection.getresponse()
        response.read()
        if response.status != 201:
            raise RuntimeError(f"seeding {name}: HTTP {response.status}")

    def put_all(self, items: Iterator[tuple[str, bytes, dict[str, str]]]) -> None:
        with ThreadPoolExecutor(self._threads) as pool:
            while chunk := list(islice(items, 2000)):
                list(pool.map(self._put, chunk))


def finished_blobs(count: int, start: int) -> Iterator[tuple[str, bytes, dict[str, str]]]:
    """What the store holds for ``count`` succeeded jobs, newer than the running ones."""
    for i in range(start, start + count):
        job = job_at(T0 + timedelta(days=1, milliseconds=i), JobState.SUCCEEDED)
        document = job.model_dump_json(by_alias=True).encode()
        meta = {"x-ms-meta-state": job.state.value, "x-ms-meta-deadline": job.deadline_at.isoformat()}
        yield JobStore.document_name(job.id), document, {"Content-Type": "application/json", **meta}
        for name in index.entry_names(job):
            yield name, b"", {}


def timed(operation: Callable[[], Any], repeat: int) -> tuple[float, int]:
    """Median seconds of ``repeat`` runs, and the storage calls of one run."""
    times, calls = [], 0
    for _ in range(repeat):
        before = storage_calls.total()
        started = time.perf_counter()
        operation()
        times.append(time.perf_counter() - started)
        calls = storage_calls.total() - before
    return statistics.median(times), calls


def measure(runtime: Runtime, probe: str, repeat: int) -> dict[str, tuple[float, int]]:
    running, store = frozenset({JobState.RUNNING}), runtime.store
    results = {
        "reconciler pass": timed(runtime.reconcile.run, repeat),
        "first page": timed(lambda: store.list(PROJECT), repeat),
        "first page, state=running": timed(lambda: store.list(PROJECT, states=running), repeat),
        "one read": timed(lambda: store.get(probe), repeat),
    }
    page = store.list(PROJECT, states=running)
    if len(page.jobs) != RUNNING or any(job.state is not JobState.RUNNING for job in page.jobs):
        raise AssertionError(f"state=running returned {len(page.jobs)} jobs, expected {RUNNING} running ones")
    if len(runtime.store.unfinished()) != RUNNING:
        raise AssertionError("the reconciler does not see exactly the running jobs")
    return results


def run(sizes: list[int], repeat: int, threads: int) -> dict[int, dict[str, tuple[float, int]]]:
    results: dict[int, dict[str, tuple[float, int]]] = {}
    storage_calls.install()
    with Azurite(in_memory=True) as azurite:
        env = {"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": "/tmp/haste-bench-scale-local"}
        runtime = build_runtime(load_settings(env))
        jobs = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
        running = [job_at(T0 + timedelta(seconds=i), JobState.QUEUED) for i in range(RUNNING)]
        for job in running:
            runtime.store.create(job)
            for state in (JobState.SUBMITTING, JobState.RUNNING):
                runtime.store.update(
                    job.id, lambda j, s=state: record(j, now=T0, limit=50, message=s.value, source="bench", state=s)
                )
        seeder, seeded = Seeder(jobs.url, jobs.container_name, threads), 0
        for size in sizes:
            started = time.perf_counter()
            seeder.put_all(finished_blobs(size - seeded, seeded))
            spent = time.perf_counter() - started
            print(f"seeded {size - seeded} finished jobs in {spent:.1f}s ({(size - seeded) / spent:.0f} jobs/s)")
            seeded = size
            results[size] = measure(runtime, running[0].id, repeat)
            for name, (seconds, calls) in results[size].items():
                print(f"  {size:>7} finished  {name:<28} {seconds * 1000:8.1f} ms  {calls:5d} storage calls")
            sys.stdout.flush()
    return results


def report(results: dict[int, dict[str, tuple[float, int]]]) -> bool:
    small, large = min(results), max(results)
    print(f"\nscale: {RUNNING} running jobs; finished jobs {', '.join(f'{s:,}' for s in sorted(results))}")
    ok = True
    for name in results[small]:
        row = "  ".join(f"{results[size][name][0] * 1000:8.1f} ms" for size in sorted(results))
        ratio = results[large][name][0] / max(results[small][name][0], 1e-9)
        ok = ok and ratio <= GOAL_RATIO
        print(f"  {name:<28} {row}   ratio {ratio:4.2f} (goal ≤ {GOAL_RATIO:g})")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=16, help="seeding connections")
    args = parser.parse_args()
    ok = report(run(sorted(args.sizes), args.repeat, args.threads))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
