"""``make bench`` (groups part): one request for N jobs against N single requests, side by side in one run.

    python -m tests.bench.group_bench                        # 1,000 singles, a 1,000-item group, a 10,000-item group
    python -m tests.bench.group_bench --items 50 --large 200 # a quick look

Each part runs on a development stack of its own (the host, Azurite, the local backend with
real processes running the artifacts workload on a small input), counting every storage call
of the host's processes at the transport (:mod:`tests.bench.storage_calls`; the calls no job
made, the host's empty queue polls and the reconciler's passes, are left out):

- **singles**: N ``POST /api/jobs`` from 32 threads;
- **group**: one ``POST /api/groups`` of N items (ADR 0040);
- **large group**: the same for ``--large`` items (10,000), every item run to its end: on 2 cores
  about 40 minutes (2,211 s measured under load), most of it the items' own workload processes. Azurite
  finds blobs by name through its index (ADR 0052); without that, its deletes read every blob it
  holds and the run slows to a stop past about 60,000 blobs.

Reported for each: the time until the request(s) were answered 202, until every job (item) was
stored ``queued``, the storage calls per job (to the moment every job was made, and over the whole
run), and the wall time until every job ended. The bench reads progress from storage itself
(uncounted), every few seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from azure.core.exceptions import AzureError
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo.models.group import Group
from hastegeo.models.states import JobState
from hastegeo.store.groups import GroupStore
from hastegeo.store.jobs import JobStore
from hastegeo.utils.files import read_json
from hastegeo_dev.stack import LocalStack
from tests.bench import storage_calls
from tests.bench.pipeline_bench import bench_stack, patiently

BENCH = Path(storage_calls.__file__).parent
SLOTS = 4
INPUT = "bench/input.txt"
OTHER_INPUT = "other/input.txt"
TERMINAL_STATES = frozenset(state for state in JobState if state.terminal)
BODY: dict[str, Any] = {"workload": "artifacts", "projectId": "bench", "inputs": [{"blob": INPUT}]}


@dataclass
class Figures:
    kind: str
    jobs: int
    answered_s: float = 0.0  # until the request(s) were answered 202
    queued_s: float = 0.0  # until every job was stored queued (made)
    calls_made: float = 0.0  # storage calls per job until then
    calls: float = 0.0  # storage calls per job over the run
    wall_s: float = 0.0  # until every job ended
    ended: str = ""


def counting_stack(workdir: Path, **extra: str) -> dict[str, str]:
    (workdir / "calls").mkdir(parents=True, exist_ok=True)
    return bench_stack(
        SLOTS,
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(BENCH / "counting_site"), str(BENCH.parents[1]), os.environ.get("PYTHONPATH")])
        ),
        HASTE_BENCH_CALLS_DIR=str(workdir / "calls"),
        **extra,
    )


def jobs_calls(workdir: Path) -> int:
    """The storage calls the stack's processes made for jobs (without empty polls and the reconciler)."""
    calls = storage_calls.read_dir(workdir / "calls")
    background = sum((storage_calls.read_dir(workdir / "calls", s) for s in storage_calls.SOURCES), Counter())
    return sum((calls - background).values())


def until(test: Callable[[], bool], timeout: float, every: float = 2.0) -> None:
    """Wait for ``test``; a storage call of the bench's own that fails (Azurite busy past its timeout with ten
    thousand items) is a look that saw nothing yet."""
    deadline = time.monotonic() + timeout
    while not _looked(test):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done after {timeout:.0f}s")
        time.sleep(every)


def _looked(test: Callable[[], bool]) -> bool:
    try:
        return test()
    except AzureError as exc:
        print(f"  (a look failed: {type(exc).__name__}; looking again)", flush=True)
        return False


def ended_count(store: JobStore, project: str) -> int:
    """Jobs of ``project`` that ended, from the state index (names only: cheap for the bench)."""
    total, token = 0, None
    while True:
        page = store.list(project, states=TERMINAL_STATES, page_size=1000, continuation_token=token)
        total += len(page.jobs)
        if (token := page.continuation_token) is None:
            return total


def singles(count: int, workdir: Path) -> Figures:
    figures = Figures("singles", count)
    with LocalStack(workdir, settings=counting_stack(workdir)) as stack:
        client, store, _ = clients(stack)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=32) as pool:
            ids = list(pool.map(lambda i: client.submit(BODY, idempotency_key=f"single-{i}")["id"], range(count)))
        figures.answered_s = figures.queued_s = time.monotonic() - started  # each answer follows its job's write
        time.sleep(1.0)  # the processes write their counts every half second
        figures.calls_made = jobs_calls(workdir) / count
        until(lambda: ended_count(store, "bench") >= len(ids), timeout=max(900.0, count * 1.5))
        figures.wall_s = time.monotonic() - started
        time.sleep(1.0)
        figures.calls = jobs_calls(workdir) / count
        figures.ended = f"{succeeded(store, ids)} succeeded"
    return figures


def group(count: int, workdir: Path, *, kind: str = "group") -> Figures:
    """One group of ``count`` items, each run to its end."""
    figures = Figures(kind, count)
    with LocalStack(workdir, settings=counting_stack(workdir)) as stack:
        assert stack.azurite.indexed_lookups, "Azurite without ADR 0052's preload: a large group would not end"
        client, _, groups = clients(stack)
        body = {**BODY, "items": [{"parameters": {}} for _ in range(count)]}
        started = time.monotonic()
        status, answer, _ = client.request("POST", "/api/groups", body, {"Idempotency-Key": f"group-{count}"})
        figures.answered_s = time.monotonic() - started
        assert status == 202, (status, answer)
        group_id = str(answer["id"])
        until(lambda: groups.get(group_id).made_at is not None, timeout=max(600.0, count * 0.6), every=0.5)
        figures.queued_s = time.monotonic() - started
        time.sleep(1.0)
        figures.calls_made = jobs_calls(workdir) / count
        print(f"  made: {figures}", flush=True)
        try:
            until(lambda: groups.get(group_id).completed_at is not None, timeout=ending_s(count), every=3.0)
        except TimeoutError:  # said in the table (its ended column), not a bench that never ends
            counts = patiently(lambda: groups.get(group_id).counts())
            figures.ended = f"not all ended after {ending_s(count):.0f} s: " + ", ".join(
                f"{n} {k}" for k, n in counts.items() if n
            )
            return figures
        figures.wall_s = time.monotonic() - started
        time.sleep(1.0)
        figures.calls = jobs_calls(workdir) / count
        final: Group = groups.get(group_id)
        counts = final.counts()
        figures.ended = ", ".join(f"{counts[k]} {k}" for k in ("succeeded", "failed", "cancelled") if counts[k])
    return figures


@dataclass(frozen=True)
class GroupFairness:
    items: int
    b_wait_s: float  # from B's submit (its POST) until its workload process started
    a_waiting_at_b: int  # A's items not started when B's job joined the local backend's line
    a_started_before_b: int  # of those, started before B's job
    b_line_s: float  # from B's submit until it joined that line (the API, its queue and the submit step)
    a_started_meanwhile: int  # A's items started in that time (their seats were freed before B was there)


def group_fairness(items: int, workdir: Path) -> GroupFairness:
    """Project B's single job submitted while project A's ``items``-item group runs, through the whole stack.

    Once ``SLOTS`` x 2 of A's items have ended, B submits one job; measured from the local backend's own
    records (each workload process's start, and when B's job joined its line): how long B's job waited to
    start, and how many of A's items that were waiting in that line when B joined it started before it,
    as the burst part of :mod:`tests.bench.fairness_bench` counts them. The items that started while B's
    request was still on its way (API, queue, submit step) are reported beside: no order could put B
    before a seat freed before it arrived. Then A's group is cancelled (the rest of its work is not the
    figure).
    """
    with LocalStack(workdir, settings=bench_stack(SLOTS)) as stack:
        client, _, groups = clients(stack)
        body = {**BODY, "items": [{"parameters": {}} for _ in range(items)]}
        status, answer, _ = client.request("POST", "/api/groups", body)
        assert status == 202, (status, answer)
        group_id = str(answer["id"])
        until(lambda: groups.get(group_id).counts()["succeeded"] >= SLOTS * 2, timeout=600.0, every=0.2)
        submitted = time.time()
        b = str(client.submit({**BODY, "projectId": "other", "inputs": [{"blob": OTHER_INPUT}]})["id"])
        root = Path(stack.env["HASTE_LOCAL_ROOT"])
        until(lambda: started_at(root, b) is not None, timeout=300.0, every=0.05)
        b_started = started_at(root, b)
        assert b_started is not None
        # B joined the line when its project was recorded, just before its queue entry (as in the burst part).
        arrived = (root / "jobs" / f"haste-{b}" / "state" / "project").stat().st_mtime
        client.request("POST", f"/api/groups/{group_id}/cancel")
        starts = [started_at(root, groups.get(group_id).job_id(i)) for i in range(items)]
        meanwhile = sum(1 for at in starts if at is not None and submitted < at <= arrived)
        waiting = [at for at in starts if at is None or at > arrived]
        before = sum(1 for at in waiting if at is not None and at < b_started)
        until(lambda: groups.get(group_id).completed_at is not None, timeout=900.0, every=3.0)
    return GroupFairness(items, b_started - submitted, len(waiting), before, arrived - submitted, meanwhile)


def ending_s(count: int) -> float:
    """How long the bench waits for every item to end: about four times what 2 cores need."""
    return max(900.0, count * 1.0)


def started_at(root: Path, job_id: str) -> float | None:
    """When the local backend started ``job_id``'s workload process (its own record), as a Unix time."""
    running = read_json(root / "jobs" / f"haste-{job_id}" / "state" / "running.json")
    return datetime.fromisoformat(running["startedAt"]).timestamp() if running else None


def in_process(count: int, workdir: Path, *, as_group: bool) -> Figures:
    """Accepting and making ``count`` jobs in this process against an Azurite of its own, without the host,
    the queues' consumers or any workload: the pipeline's own cost of the accept path (``--in-process``).

    Singles: ``JobAcceptor.accept`` from 32 threads. Group: ``GroupSteps.accept`` (the 202), then its
    ``make`` chunks delivered one after another as the queue would (every item stored ``queued``).
    """
    from hastegeo.pipeline.accept import parse_request
    from hastegeo.pipeline.groups import parse_group
    from hastegeo.settings.load import load_settings
    from hastegeo.store.queues import GroupMessage
    from hastegeo_dev.devhost.azurite import Azurite
    from tests.support.runtime import development_runtime

    storage_calls.install()
    figures = Figures(("group" if as_group else "singles") + ", in process", count)
    with Azurite(in_memory=True) as azurite:
        env = {"AzureWebJobsStorage": azurite.connection_string, "HASTE_LOCAL_ROOT": str(workdir / "local")}
        runtime = development_runtime(load_settings(env))
        runtime.blobs.get_container_client("haste-inputs").upload_blob(INPUT, b"x" * 512, overwrite=True)
        before = storage_calls.total([azurite.blob_url, azurite.queue_url])
        started = time.monotonic()
        if as_group:
            body = {**BODY, "items": [{"parameters": {}} for _ in range(count)]}
            group_, _ = runtime.groups.accept(parse_group(body))
            figures.answered_s = time.monotonic() - started
            message: GroupMessage | None = GroupMessage(group_id=group_.id)
            while message is not None:
                message = runtime.groups.handle(message)
            assert runtime.deps.groups is not None
            assert runtime.deps.groups.get(group_.id).made_at is not None
        else:
            request = parse_request(BODY)
            with ThreadPoolExecutor(max_workers=32) as pool:
                list(pool.map(lambda i: runtime.acceptor.accept(request, idempotency_key=f"s-{i}"), range(count)))
            figures.answered_s = time.monotonic() - started
        figures.queued_s = time.monotonic() - started
        figures.calls_made = (storage_calls.total([azurite.blob_url, azurite.queue_url]) - before) / count
        figures.ended = "made (not run)"
        for adapter in runtime.registry.built().values():
            adapter.close()
    return figures


def clients(stack: LocalStack) -> tuple[ApiClient, JobStore, GroupStore]:
    blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
    for name in (INPUT, OTHER_INPUT):  # each project reads its own folder
        blobs.get_container_client("haste-inputs").upload_blob(name, b"x" * 512, overwrite=True)
    jobs = blobs.get_container_client("haste-jobs")
    return ApiClient(stack.base_url, timeout=120), JobStore(jobs), GroupStore(jobs)


def succeeded(store: JobStore, ids: list[str]) -> int:
    with ThreadPoolExecutor(max_workers=8) as pool:
        return sum(1 for job in pool.map(store.get, ids) if job.state.value == "succeeded")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000, help="singles, and the group's items")
    parser.add_argument("--large", type=int, default=10000, help="items of the large group (0: skip)")
    parser.add_argument("--in-process", action="store_true", help="accept and make only, no host (see in_process)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="haste-group-bench-", ignore_cleanup_errors=True) as tmp:
        if args.in_process:
            for size, as_group in ((args.items, False), (args.items, True), (args.large, True)):
                if size:
                    results.append(in_process(size, Path(tmp) / f"{size}-{as_group}", as_group=as_group))
                    print(f"  done: {results[-1]}", flush=True)
        for name, part in (
            ()
            if args.in_process
            else (
                ("singles", lambda folder: singles(args.items, folder) if args.items else None),
                ("group", lambda folder: group(args.items, folder) if args.items else None),
                ("large", lambda folder: group(args.large, folder, kind="large group") if args.large else None),
            )
        ):
            figures = part(Path(tmp) / name)
            if figures is not None:
                results.append(figures)
                print(f"  done: {figures}", flush=True)
    print(f"\ngroups: {args.items} single requests against one group of {args.items} items; {SLOTS} local slots")
    print(
        f"  {'':<20} {'jobs':>6} {'answered 202':>13} {'all queued':>11} {'calls/job made':>15} "
        f"{'calls/job':>10} {'all ended':>10}  ended"
    )
    for r in results:
        run = f"{r.calls:>10.1f} {r.wall_s:>9.1f}s" if r.wall_s else f"{'-':>10} {'-':>10}"
        print(
            f"  {r.kind:<20} {r.jobs:>6} {r.answered_s:>12.2f}s {r.queued_s:>10.1f}s {r.calls_made:>15.1f} {run}"
            f"  {r.ended}"
        )
    return 0 if all(r.ended for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
