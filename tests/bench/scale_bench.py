"""``make bench-scale``: what the job store costs as finished jobs pile up.

For each size (cumulative: the store grows from one size to the next) the bench seeds
that many finished jobs beside 50 running ones in one project, then times, fastest
and median of ``--repeat`` runs, through the real store and reconciler against Azurite:

- a reconciler pass (the timer's whole sweep);
- the first page of the project's jobs (what ``GET /api/jobs?projectId=`` reads);
- the first page filtered by ``state=running`` (the running jobs are the oldest, so a
  store that walked history would read every finished job first);
- one read of a job;
- the project's costs for a month (what ``GET /api/projects/{id}/costs`` reads: the running totals,
  seeded as the journal keeps them for every finished job, docs/adr/0040).

It prints the storage calls each operation made (counted at the azure-core
transport, :mod:`tests.bench.storage_calls`) and the ratio largest/smallest size
per operation; the goal is ≤ 2 (ADR 0011).

Running jobs are seeded in their steady state: each has a poll message pending, due a
while ahead (``poll_due_at``, as a live chain keeps it), so a pass reads each and sends
nothing (one listing and one read per running job, not a re-armed chain each).

Then the cost of following running jobs (``--running``, default 1,000 and 10,000,
a mix of local, Batch and Azure ML jobs, seeded beside the finished ones): the
reconciler pass, and per running job per minute the poll messages and the storage
calls, both the poll chain's (Batch and Azure ML: measured end to end over an hour of a
held run by :mod:`tests.bench.follow_bench`; local: a real job held waiting for its one
slot, whose every poll is a steady-state poll, at its longest delay) and the reconciler's
share (a pass a minute, shared by every running job).

Seeding writes what the store itself writes for a finished job (its document with its
metadata, its project-index entry and its ``ended/succeeded`` entry) into the files of a
stopped Azurite (:mod:`tests.bench.azurite_seed`), then starts it again: through HTTP,
Azurite took 7-25 s per 1,000 finished jobs on this shared 2-core machine (100,000 would
take 10-40 minutes); written to its files, 100,000 take well under a minute.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.compute.local_node.layout import LocalLayout
from hastegeo.models.history import make_event
from hastegeo.models.ids import new_job_id
from hastegeo.models.job import Job
from hastegeo.models.moves import record
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.pipeline.totals import PREFIX as TOTALS_PREFIX
from hastegeo.pipeline.totals import Day, Month, month_of
from hastegeo.runtime import Runtime
from hastegeo.settings.load import load_settings
from hastegeo.store import due, index
from hastegeo.store.jobs import JobStore, _metadata
from hastegeo.store.queues import POLL_QUEUE, JobMessage
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.readiness import StartBound
from tests.bench import follow_bench, storage_calls
from tests.bench.azurite_seed import append_blobs
from tests.bench.follow_bench import FROM_MIN, TO_MIN, FollowCost
from tests.support.runtime import development_runtime

PROJECT = "bench"
RUNNING = 50
GOAL_RATIO = 2.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
DUE_AHEAD = timedelta(hours=1)  # a pending poll message due this far ahead: the chain is live all bench long
RUNNING_SIZES = [1000, 10000]


BACKENDS = ("local", "azure_batch", "azure_ml")  # the running jobs are a mix of the three, in turn


def job_at(created: datetime, state: JobState, backend: str = "local") -> Job:
    handle = None
    if state is JobState.RUNNING:  # what each adapter's submit returns, with provider ids nothing here resolves
        handle = ComputeJobHandle(backend=backend, provider_ids={"job_id": "seeded"}, submitted_at=created)
    return Job(
        id=new_job_id(),
        project_id=PROJECT,
        workload="artifacts",
        state=state,
        requested_backend="auto",
        backend=backend,
        handle=handle,
        created_at=created,
        updated_at=created,
        deadline_at=created + timedelta(days=3650),
        history=[
            make_event(created, JobState.QUEUED, "accepted", "bench"),
            make_event(created, state, "done", "bench"),
        ],
    )


def stored_blobs(job: Job) -> Iterator[tuple[str, bytes, dict[str, str], str]]:
    """What the store writes for ``job``: its document with its metadata, its project and state entries."""
    document = job.model_dump_json(by_alias=True).encode()
    yield JobStore.document_name(job.id), document, _metadata(job), "application/json"
    for name in index.entry_names(job):
        yield name, b"", {}, "application/octet-stream"


def finished_blobs(
    count: int, start: int, ids: list[str] | None = None
) -> Iterator[tuple[str, bytes, dict[str, str], str]]:
    """What the store holds for ``count`` succeeded jobs, newer than the running ones (their ids go to ``ids``)."""
    for i in range(start, start + count):
        job = job_at(T0 + timedelta(days=1, milliseconds=i), JobState.SUCCEEDED)
        if ids is not None:
            ids.append(job.id)
        yield from stored_blobs(job)


def seed_totals(runtime: Runtime, ids: list[str]) -> None:
    """The project's cost totals as the journal keeps them once ``ids`` ended (a cent each, on the seeded day)."""
    day = Day(amount=Decimal("0.01") * len(ids), jobs=len(ids))
    day.by["backend"]["local"] = day.amount
    month = Month(currency="USD", days={(T0 + timedelta(days=1)).date().isoformat(): day}, counted=set(ids))
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    container.upload_blob(f"{TOTALS_PREFIX}/{PROJECT}/{month_of(T0.date())}.json", month.dump(), overwrite=True)


def steady(job: Job, now: datetime) -> Job:
    """``job`` as a live poll chain keeps it: updated now, its pending poll message due ahead (pure)."""
    return job.model_copy(update={"updated_at": now, "poll_due_at": now + DUE_AHEAD})


def running_blobs(count: int, start: int, now: datetime) -> Iterator[tuple[str, bytes, dict[str, str], str]]:
    """What the store holds for ``count`` running jobs in their steady state, older than the finished ones:
    each with its due entry (ADR 0041), as the store's writes keep it once a job has settled."""
    for i in range(start, start + count):
        job = steady(job_at(T0 - timedelta(days=1, milliseconds=i), JobState.RUNNING, BACKENDS[i % 3]), now)
        job = job.model_copy(update={"due_entry": due.entry_name(job)})
        yield from stored_blobs(job)
        assert job.due_entry is not None
        yield job.due_entry, b"", {}, "application/octet-stream"


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
        "project costs, a month": timed(lambda: costs_of_month(runtime), repeat, at),
    }
    page = store.list(PROJECT, states=running)
    if len(page.jobs) != RUNNING or any(job.state is not JobState.RUNNING for job in page.jobs):
        raise AssertionError(f"state=running returned {len(page.jobs)} jobs, expected {RUNNING} running ones")
    if len(runtime.store.active()) != RUNNING:
        raise AssertionError("the active index does not hold exactly the running jobs")
    return results


def costs_of_month(runtime: Runtime) -> int:
    """What ``GET /api/projects/{id}/costs`` reads for the seeded month: the jobs it counts."""
    totals = runtime.journal.totals
    assert totals is not None
    _currency, days = totals.between(PROJECT, T0.date(), T0.date() + timedelta(days=30))
    return sum(day.jobs for day in days.values())


def start(location: Path) -> tuple[Azurite, Runtime]:
    azurite = Azurite(location=str(location), start_bound=StartBound(stall_s=600.0, cpu_s=600.0, wall_s=600.0)).start()
    env = {"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": str(location.parent / "local")}
    return azurite, development_runtime(load_settings(env))


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
                runtime.journal.update(
                    job.id, lambda j, s=state: record(j, now=T0, limit=50, message=s.value, source="bench", state=s)
                )
            runtime.journal.update(job.id, lambda j: steady(j, datetime.now(UTC)))  # its chain is live
        runtime.store.backfill_index()  # a new store: nothing to index (marks it so the timed passes skip it)
        seeded = 0
        finished: list[str] = []
        for size in sizes:
            azurite.stop()
            started = time.perf_counter()
            container = runtime.settings.storage.jobs_container
            append_blobs(location, container, finished_blobs(size - seeded, seeded, finished))
            azurite, runtime = start(location)
            seed_totals(runtime, finished)
            if costs_of_month(runtime) != size:
                raise AssertionError("the project's cost totals do not count the finished jobs")
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


def poll_cost(workdir: Path, connection_string: str, polls: int = 5) -> tuple[float, float]:
    """Storage calls of one steady-state poll and the polls a running job gets a minute.

    A real job on the local backend, held waiting for its one slot (a live process holds
    it), is polled through the real poll step: the provider answers "not finished", the
    job is unchanged but for its due time, and the next message is sent, exactly as for a
    running job. The calls are the step's own plus the host's receive and delete of its
    message; the polls a minute are those of the chain at its longest delay.
    """
    root = workdir / "poll-local"
    env = {"AzureWebJobsStorage": connection_string, "HASTE_LOCAL_ROOT": str(root), "HASTE_LOCAL_SLOTS": "1"}
    runtime = development_runtime(load_settings(env))
    inputs = runtime.blobs.get_container_client(runtime.settings.storage.inputs_container)
    inputs.upload_blob("poll/input.txt", b"x", overwrite=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        (LocalLayout(root).ensure().root / "active" / "held").write_text(str(holder.pid))
        request = parse_request({"workload": "artifacts", "projectId": "poll", "inputs": [{"blob": "poll/input.txt"}]})
        job = runtime.acceptor.accept(request, idempotency_key=f"poll-{time.time_ns()}").job
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
        spent = []
        for _ in range(polls + 2):  # the first polls record the wait; then each is a steady-state poll
            seq = runtime.store.get(job.id).poll_seq
            before = storage_calls.total()
            runtime.poll.handle(JobMessage(job_id=job.id, kind="poll", poll_seq=seq))
            spent.append(storage_calls.total() - before + 2)  # + the host's receive and delete of the message
            if runtime.store.get(job.id).state.terminal:
                raise AssertionError("the held job ended: its polls are no running job's")
        runtime.queues.client(POLL_QUEUE).clear_messages()
    finally:
        holder.kill()
        holder.wait()
        for adapter in runtime.registry.built().values():
            adapter.close()
    return statistics.median(spent[2:]), 60.0 / runtime.settings.pipeline.poll_max_s


DUE_SHARE = 100  # "some due": one running job in this many has lost its poll chain


def run_running(sizes: list[int], repeat: int, workdir: Path) -> dict[int, dict[str, tuple[float, int]]]:
    """With ``sizes`` running jobs in their steady state, fastest seconds and storage calls of: the sweep as
    it was before the due index (every ``active/`` entry listed, every document read: ``JobStore.active``),
    the reconciler pass with none due, and with one job in :data:`DUE_SHARE` due (its chain lost)."""
    results: dict[int, dict[str, tuple[float, int]]] = {}
    storage_calls.install()
    location = workdir / "azurite-running"
    azurite, runtime = start(location)
    try:
        runtime.store.create(job_at(T0, JobState.SUCCEEDED))  # Azurite writes the first blob: the seeding template
        runtime.store.backfill_index()
        seeded = 0
        for size in sizes:
            azurite.stop()
            container = runtime.settings.storage.jobs_container
            append_blobs(location, container, running_blobs(size - seeded, seeded, datetime.now(UTC)))
            azurite, runtime = start(location)
            seeded = size
            at = [azurite.blob_url, azurite.queue_url]
            runtime.reconcile.run()  # the census's first cycle (it walks the entries: no job is read)
            before, _median, before_calls = timed(runtime.store.active, repeat, at)
            if len(runtime.store.active()) != size:
                raise AssertionError(f"the active index does not hold exactly the {size} running jobs")
            none, _median, none_calls = timed(runtime.reconcile.run, repeat, at)
            lost = [job for job in runtime.store.active()[::DUE_SHARE]]
            for job in lost:  # their chains lost an hour ago: due now
                runtime.store.update(job.id, lambda j: j.model_copy(update={"poll_due_at": j.updated_at - DUE_AHEAD}))
            some, _median, some_calls = timed(runtime.reconcile.run, repeat, at)
            runtime.queues.client(POLL_QUEUE).clear_messages()
            for job in lost:  # live again, so the next size's "none due" is none
                runtime.store.update(job.id, lambda j: steady(j, datetime.now(UTC)))
            results[size] = {
                "before: every running job read": (before, before_calls),
                "reconciler pass, none due": (none, none_calls),
                f"reconciler pass, {len(lost)} due": (some, some_calls),
            }
            for name, (spent, calls) in results[size].items():
                print(f"  {size:>7} running   {name:<36} {spent:8.3f} s  {calls:6d} storage calls", flush=True)
    finally:
        azurite.stop()
    return results


def report_running(
    results: dict[int, dict[str, tuple[float, int]]],
    poll_calls: float,
    polls_per_min: float,
    followed: list[FollowCost],
) -> bool:
    """The pass before and after the due index side by side (goals: ≤ 1 s at 10,000 running, ≤ 10 storage calls
    with none due); then per running job per minute, by backend and size, the poll chain's calls (measured end to
    end: ``follow_bench``) and the reconciler's share (goal: ≤ 1 for Batch and Azure ML jobs past ten minutes)."""
    sizes = sorted(results)
    print("\nthe reconciler pass, before and after the due index (fastest of the runs; storage calls)")
    print(f"  {'running jobs':<40}" + "".join(f"{size:>20,}" for size in sizes))
    labels = ["before: every running job read", "reconciler pass, none due", f"reconciler pass, 1 in {DUE_SHARE} due"]
    for row, label in enumerate(labels):
        cells = [list(results[size].values())[row] for size in sizes]
        print(f"  {label:<40}" + "".join(f"{t:>10.3f} s {c:>6d} c" for t, c in cells))
    none = {size: results[size]["reconciler pass, none due"] for size in sizes}
    ok_pass = all(t <= 1.0 for t, _ in none.values()) and all(c <= 10 for _, c in none.values())
    print(f"  goal: none due ≤ 10 storage calls and ≤ 1 s at every size: {'met' if ok_pass else 'MISSED'}")
    share = {size: none[size][1] / size for size in sizes}  # a pass a minute, shared by every running job
    before = {size: (results[size]["before: every running job read"][1] + 3) / size for size in sizes}
    print(
        "\nfollowing a running job, per minute: its poll chain (Batch and Azure ML measured end to end, minute "
        f"{FROM_MIN}-{TO_MIN} of a held run; local: a steady-state poll, {poll_calls:g} calls, at its longest delay) "
        "and the reconciler's share of a pass a minute"
    )
    print(f"  {'running jobs':<40}" + "".join(f"{size:>12,}" for size in sizes))
    print(f"  {'before, every backend (60 s polls)':<40}" + "".join(f"{6.0 - 1 + before[s]:>12.2f}" for s in sizes))
    ok = ok_pass
    chains = [("local", poll_calls * polls_per_min, polls_per_min)]
    chains += [(cost.backend, cost.calls_per_minute, cost.polls_per_minute) for cost in followed]
    for backend, calls, polls in chains:
        values = [calls + share[size] for size in sizes]
        goal = backend != "local"
        ok = ok and (not goal or all(value <= 1.0 for value in values))
        print(f"  {backend + ' storage calls':<40}" + "".join(f"{value:>12.2f}" for value in values))
        print(f"  {'  poll messages':<40}" + "".join(f"{polls:>12.3f}" for _ in sizes))
    label = "  of which the reconciler's"
    print(f"  {label:<40}" + "".join(f"{share[size]:>12.4f}" for size in sizes))
    met = all(c + share[s] <= 1.0 for _, c, _p in chains[1:] for s in sizes)
    print(
        f"  goal: ≤ 1 storage call a minute per Batch and Azure ML job past ten minutes: {'met' if met else 'MISSED'}"
    )
    return ok


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
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000], help="finished jobs")
    parser.add_argument("--running", type=int, nargs="*", default=RUNNING_SIZES, help="running jobs (none: skip)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="haste-bench-scale-") as tmp:
        ok = report(run(sorted(args.sizes), args.repeat, Path(tmp))) if args.sizes else True
        if args.running:
            print(f"\nrunning jobs {', '.join(f'{size:,}' for size in sorted(args.running))}: steady state")
            running = run_running(sorted(args.running), max(1, min(args.repeat, 3)), Path(tmp))
            with Azurite(in_memory=True) as azurite:
                poll_calls, polls_per_min = poll_cost(Path(tmp), azurite.connection_string)
            ok = report_running(running, poll_calls, polls_per_min, follow_bench.measure()) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
