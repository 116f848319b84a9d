"""Fair share: one job of project B submitted during project A's burst, on the local backend and on Batch.

    python -m tests.bench.fairness_bench                  # a 1,000-job burst, 4 slots, both backends
    python -m tests.bench.fairness_bench --jobs 200 --slots 2 --backends local

Local: real processes (each workload a short Python process, as the local backend runs
it). Project A submits its whole burst; once ``--slots`` x 2 of its jobs have
finished (mid-burst), project B submits one job. Measured: how long B's job
waited to start, and how many of A's jobs that were waiting when it joined the
queue started before it. "today's order" is the queue taken oldest first (B's job given A's
project, which is exactly first-come first-served); "projects in turn" is the
admission this release ships. The rest of the burst is cancelled once B's job
has started, so the run is bounded by the burst's submission, not its work.

Batch: the Batch test service with a pool of ``--slots`` task slots, taken first come,
first served as Batch does; "today's order" gives Batch every job, "projects in turn"
holds them in the pipeline's admission book and the step that frees a seat submits the
job that got it; "in turn, by message" is that admission as first shipped, the job
that got the seat waiting for its submit message (:mod:`tests.bench.fairness_batch`).
Each order runs against an Azurite of its own.

With a group (``--group-items``, ADR 0040): project A submits one group of that many items through the
whole development stack (the API, the queues, the local backend), and B submits one single job once a few
of A's items have run; the goal is that B's job starts within 2 s of its POST, before A's items that
were waiting in the local backend's line when B's job joined it, counted as the burst above counts them
(:func:`tests.bench.group_bench.group_fairness`, which also reports the items that started while B's
request was on its way).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from azure.storage.blob import BlobServiceClient

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec
from hastegeo.compute.local.adapter import LocalBackend
from hastegeo.settings.load import load_settings
from hastegeo.utils.files import read_json
from hastegeo_dev.devhost.azurite import Azurite
from tests.bench import fairness_batch, group_bench

WORKLOAD = ("python", "-c", "pass")
GROUP_GOAL_S = 2.0
DEV_STORAGE = "UseDevelopmentStorage=true"  # never contacted: these jobs have no inputs and nobody reads a status


@dataclass(frozen=True)
class Result:
    backend: str
    order: str
    b_wait_s: float
    a_waiting_at_b: int
    a_started_before_b: int


def _spec(name: str, project: str) -> ComputeJobSpec:
    return ComputeJobSpec(
        job_id=name,
        name=f"haste-{name}",
        workload="artifacts",
        entrypoint=WORKLOAD,
        output=BlobLocation(container="haste-outputs", path=f"jobs/{name}"),
        labels={"project": project},
        time_limit_s=600,
    )


def _started(root: Path, name: str) -> datetime | None:
    running = read_json(root / "jobs" / f"haste-{name}" / "state" / "running.json")
    return datetime.fromisoformat(running["startedAt"]) if running else None


def _ended(root: Path, name: str) -> bool:
    return (root / "jobs" / f"haste-{name}" / "state" / "exit.json").exists()


def run(order: str, jobs: int, slots: int, root: Path) -> Result:
    settings = load_settings({"AzureWebJobsStorage": DEV_STORAGE, "HASTE_LOCAL_ROOT": str(root)})
    blobs = BlobServiceClient.from_connection_string(DEV_STORAGE)
    context = BackendContext(settings=settings.backend("local"), blob_service=blobs)
    local = LocalBackend(context, root, slots, sys.executable)
    burst = [f"a{i:05d}" for i in range(jobs)]
    handles = [local.submit(_spec(name, "A")) for name in burst]
    deadline = time.monotonic() + 600
    while sum(_ended(root, name) for name in burst[: slots * 2]) < slots * 2:  # mid-burst: some have run
        if time.monotonic() > deadline:
            raise TimeoutError("the burst did not start")
        time.sleep(0.02)
    submitted = time.time()
    handles.append(local.submit(_spec("b", "B" if order == "projects in turn" else "A")))
    while (b_started := _started(root, "b")) is None:
        if time.monotonic() > deadline:
            raise TimeoutError("B's job did not start")
        time.sleep(0.01)
    # Waiting when B's job joined the queue (its project is recorded just before its queue entry).
    arrived = (root / "jobs" / "haste-b" / "state" / "project").stat().st_mtime
    waiting = [_started(root, name) for name in burst]
    waiting = [at for at in waiting if at is None or at.timestamp() > arrived]
    before = sum(1 for at in waiting if at is not None and at < b_started)
    for handle in handles:
        local.cancel(handle)
    local.close()
    return Result("local", order, b_started.timestamp() - submitted, len(waiting), before)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in project A's burst")
    parser.add_argument("--slots", type=int, default=4, help="local slots, and the Batch pool's task slots")
    parser.add_argument("--backends", nargs="+", default=["local", "azure_batch"], choices=["local", "azure_batch"])
    parser.add_argument("--group-items", type=int, default=1000, help="project A's group, through the stack (0: skip)")
    args = parser.parse_args()
    results = []
    for order in (fairness_batch.TODAY, fairness_batch.BY_MESSAGE, fairness_batch.TURNS):
        if "local" in args.backends and order != fairness_batch.BY_MESSAGE:
            with tempfile.TemporaryDirectory(prefix="fairness-bench-") as folder:
                results.append(run(order, args.jobs, args.slots, Path(folder)))
        if "azure_batch" in args.backends:
            with Azurite(in_memory=True) as azurite:
                batch = fairness_batch.run(order, args.jobs, args.slots, azurite.connection_string)
                results.append(Result("azure_batch", order, *batch))
    print(f"project A: {args.jobs} jobs, then one job of project B mid-burst; {args.slots} slots")
    print(
        f"{'backend':<12} {'order':<20} {'B waited (s)':>13} {'A waiting then':>15} {'of those, started before B':>27}"
    )
    for r in sorted(results, key=lambda r: r.backend != "local"):
        print(f"{r.backend:<12} {r.order:<20} {r.b_wait_s:>13.2f} {r.a_waiting_at_b:>15} {r.a_started_before_b:>27}")
    if not args.group_items:
        return 0
    with tempfile.TemporaryDirectory(prefix="fairness-group-", ignore_cleanup_errors=True) as folder:
        g = group_bench.group_fairness(args.group_items, Path(folder))
    met = g.b_wait_s <= GROUP_GOAL_S and g.a_started_before_b == 0
    print(
        f"\nproject A: one group of {g.items} items (whole stack, {group_bench.SLOTS} local slots), then one job of B"
    )
    print(f"{'local':<12} {'group, in turn':<20} {g.b_wait_s:>13.2f} {g.a_waiting_at_b:>15} {g.a_started_before_b:>27}")
    print(
        f"  B's request reached the local backend's line {g.b_line_s:.2f} s after its POST; "
        f"{g.a_started_meanwhile} of A's items started in that time (seats freed before B was in line)"
    )
    print(f"  goal: B's job starts within {GROUP_GOAL_S:g} s, before A's waiting items: {'met' if met else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
