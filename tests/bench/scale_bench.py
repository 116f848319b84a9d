"""``make bench-scale``: what the job store costs as finished jobs pile up.

For each size (cumulative: the store grows from one size to the next) the bench seeds
that many finished jobs beside 50 running ones in one project, then times, fastest
and median of ``--repeat`` runs, through the real store and reconciler against Azurite:

- a reconciler pass (the timer's whole sweep);
- the first page of the project's jobs (what ``GET /api/jobs?projectId=`` reads);
- the first page filtered by ``state=running`` (the running jobs are the oldest, so a
  store that walked history would read every finished job first);
- one read of a job.

It prints the storage calls each operation made (counted at the azure-core
transport, :mod:`tests.bench.storage_calls`) and the ratio largest/smallest size
per operation; the goal is ≤ 2 (ADR 0011).

Seeding writes what the store itself writes for a finished job (its document with its
metadata, its project-index entry and its ``ended/succeeded`` entry) into the files of a
stopped Azurite (:mod:`tests.bench.azurite_seed`), then starts it again: through HTTP,
Azurite took 7-25 s per 1,000 finished jobs on this shared 2-core machine (100,000 would
take 10-40 minutes); written to its files, 100,000 take well under a minute.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hastegeo.config import load_settings
from hastegeo.models.history import make_event
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deps import new_job_id, record
from hastegeo.runtime import Runtime, build_runtime
from hastegeo.store import index
from hastegeo.store.jobs import JobStore
from hastegeo_dev.devhost.azurite import Azurite
from tests.bench import storage_calls
from tests.bench.azurite_seed import append_blobs

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


def finished_blobs(count: int, start: int) -> Iterator[tuple[str, bytes, dict[str, str], str]]:
    """What the store holds for ``count`` succeeded jobs, newer than the running ones."""
    for i in range(start, start + count):
        job = job_at(T0 + timedelta(days=1, milliseconds=i), JobState.SUCCEEDED)
        document = job.model_dump_json(by_alias=True).encode()
        meta = {
            "state": job.state.value,
            "deadline": job.deadline_at.isoformat(),
            "updated": job.updated_at.isoformat(),
        }
        yield JobStore.document_name(job.id), document, meta, "application/json"
        for name in index.entry_names(job):
            yield name, b"", {}, "application/octet-stream"


def timed(operation: Callable[[], Any], repeat: int, endpoints: list[str]) -> tuple[float, float, int]:
    """Fastest and median seconds of ``repeat`` runs, and the storage calls of one run.

    The fastest run is the operation's own cost; on a machine shared with other work the
    median also holds the neighbours' load, so the ratios are taken on the fastest.
    """
    times, calls = [], 0
    for _ in range(repeat):
        before = storage_calls.total(endpoints)
        started = time.perf_counter()
        operation()
        times.append(time.perf_counter() - started)
        calls = storage_calls.total(endpoints) - before
    return min(times), statistics.median(times), calls


def measure(runtime: Runtime, azurite: Azurite, probe: str, repeat: int) -> dict[str, tuple[float, float, int]]:
    running, store, at = frozenset({JobState.RUNNING}), runtime.store, [azurite.blob_url, azurite.queue_url]
    results = {
        "reconciler pass": timed(runtime.reconcile.run, repeat, at),
        "first page": timed(lambda: store.list(PROJECT), repeat, at),
        "first page, state=running": timed(lambda: store.list(PROJECT, states=running), repeat, at),
        "one read": timed(lambda: store.get(probe), repeat, at),
    }
    page = store.list(PROJECT, states=running)
    if len(page.jobs) != RUNNING or any(job.state is not JobState.RUNNING for job in page.jobs):
        raise AssertionError(f"state=running returned {len(page.jobs)} jobs, expected {RUNNING} running ones")
    if len(runtime.store.unfinished()) != RUNNING:
        raise AssertionError("the reconciler does not see exactly the running jobs")
    return results


def start(location: Path) -> tuple[Azurite, Runtime]:
    azurite = Azurite(location=str(location), startup_timeout=600).start()
    env = {"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": str(location.parent / "local")}
    return azurite, build_runtime(load_settings(env))


def run(sizes: list[int], repeat: int, workdir: Path) -> dict[int, dict[str, tuple[float, float, int]]]:
    results: dict[int, dict[str, tuple[float, float, int]]] = {}
    storage_calls.install()
    location = workdir / "azurite"
    azurite, runtime = start(location)
    try:
        running = [job_at(T0 + timedelta(seconds=i), JobState.QUEUED) for i in range(RUNNING)]
        for job in running:
            runtime.store.create(job)
            for state in (JobState.SUBMITTING, JobState.RUNNING):
                runtime.store.update(
                    job.id, lambda j, s=state: record(j, now=T0, limit=50, message=s.value, source="bench", state=s)
                )
        runtime.store.backfill_index()  # a new store: nothing to index (marks it so the timed passes skip it)
        seeded = 0
        for size in sizes:
            azurite.stop()
            started = time.perf_counter()
            container = runtime.settings.storage.jobs_container
            append_blobs(location, container, finished_blobs(size - seeded, seeded))
            azurite, runtime = start(location)
            spent = time.perf_counter() - started
            print(f"seeded {size - seeded} finished jobs in {spent:.1f}s (written beside a stopped Azurite, restarted)")
            seeded = size
            results[size] = measure(runtime, azurite, running[0].id, repeat)
            for name, (fastest, median, calls) in results[size].items():
                print(
                    f"  {size:>7} finished  {name:<28} {fastest * 1000:8.1f} ms (median {median * 1000:7.1f})"
                    f"  {calls:4d} storage calls"
                )
            sys.stdout.flush()
    finally:
        azurite.stop()
    return results


def report(results: dict[int, dict[str, tuple[float, float, int]]]) -> bool:
    small, large = min(results), max(results)
    sizes = ", ".join(f"{size:,}" for size in sorted(results))
    print(f"\nscale: {RUNNING} running jobs; finished jobs {sizes} (fastest of the runs; storage calls)")
    ok = True
    for name in results[small]:
        row = "  ".join(f"{results[size][name][0] * 1000:8.1f} ms" for size in sorted(results))
        calls = "/".join(str(results[size][name][2]) for size in sorted(results))
        ratio = results[large][name][0] / max(results[small][name][0], 1e-9)
        ok = ok and ratio <= GOAL_RATIO
        print(f"  {name:<28} {row}   ratio {ratio:4.2f} (goal ≤ {GOAL_RATIO:g})   calls {calls}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="haste-bench-scale-") as tmp:
        ok = report(run(sorted(args.sizes), args.repeat, Path(tmp)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
