"""``make bench`` (load part): a burst of N jobs through the API with a configured submission rate.

Every job must be accepted — at once, or after ``429`` + ``Retry-After`` —
and finish. Reported: admissions and refusals, time to finish, the host's
memory (resident set of the host and its worker processes, sampled every
second: start, peak, end), the polling cost per job (poll-chain messages
processed per job, from each job's ``attempts.poll``), the acceptance rate
(jobs accepted per second, from the first submit until the last was accepted,
while earlier jobs run) and the storage calls per job, by operation: every
storage client of the host and its workers (the local backend's staging and uploads
among them) counts its requests at the azure-core transport (:mod:`tests.bench.storage_calls`).
The bench waits by reading the job store itself, so its own reads are not counted. The
jobs' own calls are reported apart from those no job made: the host's queue polling that
found nothing (it polls whether or not jobs run, and goes on after the last job ends) and
the reconciler's passes (a timer, once a minute), each shown on its own line. Only the
host's processes count calls; the workload processes, which make none, load nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient, ApiError
from hastegeo.store.jobs import JobStore
from hastegeo_dev.stack import LocalStack
from tests.bench import storage_calls
from tests.bench.pipeline_bench import bench_stack
from tests.bench.process_cpu import host_worker

BENCH = Path(storage_calls.__file__).parent

TERMINAL = {"succeeded", "failed", "cancelled"}
# Poll-chain messages per job, budget: the chain backs off to HASTE_POLL_MAX_S and the
# local backend's exit nudge ends most jobs before their second poll.
POLL_BUDGET_PER_JOB = 6


def host_rss_mb(stack: LocalStack) -> float:
    if stack.host is None or stack.host.process is None:
        return 0.0
    total = 0
    try:
        root = psutil.Process(stack.host.process.pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    for process in processes:
        try:  # the host and its worker processes; not the workloads it starts
            if process is root or host_worker(process):
                total += process.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


def run(jobs: int, rate: float, burst: int, workdir: Path) -> dict[str, Any]:
    settings = bench_stack(
        8,
        HASTE_SUBMIT_RATE_PER_S=str(rate),
        HASTE_SUBMIT_BURST=str(burst),
        # Every process the stack starts counts its storage calls into calls/.
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(BENCH / "counting_site"), str(BENCH.parents[1]), os.environ.get("PYTHONPATH")])
        ),
        HASTE_BENCH_CALLS_DIR=str(workdir / "calls"),
    )
    (workdir / "calls").mkdir(parents=True, exist_ok=True)
    with LocalStack(workdir, settings=settings) as stack:
        blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
        store = JobStore(blobs.get_container_client("haste-jobs"))
        blobs.get_container_client("haste-inputs").upload_blob("load/input.txt", b"x" * 512, overwrite=True)
        client = ApiClient(stack.base_url, timeout=60)
        request = {"workload": "artifacts", "projectId": "load", "inputs": [{"blob": "load/input.txt"}]}
        memory: list[float] = [host_rss_mb(stack)]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(1.0):
                memory.append(host_rss_mb(stack))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        refused = {429: 0, 503: 0}
        lock = threading.Lock()

        def submit(i: int) -> str:
            while True:
                try:
                    return str(client.submit(request, idempotency_key=f"load-{i}")["id"])
                except ApiError as exc:
                    if exc.status not in (429, 503):
                        raise
                    with lock:  # 503: storage did not answer within the API's budget; the answer says retry
                        refused[exc.status] += 1
                    time.sleep(float(exc.headers.get("Retry-After", "1")))

        started = time.time()
        with ThreadPoolExecutor(max_workers=32) as pool:
            ids = list(pool.map(submit, range(jobs)))
        accepted_after = time.time() - started
        finals = wait(store, ids, timeout=max(600.0, jobs * 1.0))
        elapsed = time.time() - started
        time.sleep(1.5)  # the processes write their counts every half second
        calls = storage_calls.read_dir(workdir / "calls")
        background = {source: storage_calls.read_dir(workdir / "calls", source) for source in storage_calls.SOURCES}
        stop.set()
        sampler.join(2)
        polls = [int(job.get("attempts", {}).get("poll", 0)) for job in finals]
    return {
        "jobs": jobs,
        "succeeded": sum(1 for job in finals if job["state"] == "succeeded"),
        "refused_429": refused[429],
        "refused_503": refused[503],
        "accepted_after_s": accepted_after,
        "acceptance_per_s": jobs / accepted_after if accepted_after else 0.0,
        "calls": calls,
        "background": background,
        "elapsed_s": elapsed,
        "rss_start_mb": memory[0],
        "rss_peak_mb": max(memory),
        "rss_first_third_mb": statistics.median(memory[: max(1, len(memory) // 3)]),
        "rss_last_third_mb": statistics.median(memory[-max(1, len(memory) // 3) :]),
        "polls_mean": statistics.mean(polls) if polls else 0.0,
        "polls_max": max(polls) if polls else 0,
    }


def wait(store: JobStore, ids: list[str], timeout: float) -> list[dict[str, Any]]:
    """The jobs' API views once all ended, read from the store (not through the host, whose calls are counted)."""
    deadline = time.monotonic() + timeout
    pending, done = set(ids), {}
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} jobs did not finish in {timeout:.0f}s")
        time.sleep(5)  # reading every job: polling it fast would load the stack under test
        token = None
        while True:
            page = store.list("load", page_size=200, continuation_token=token)
            for job in page.jobs:
                if job.id in pending and job.state.terminal:
                    pending.discard(job.id)
                    done[job.id] = job.api_view()
            if (token := page.continuation_token) is None:
                break
    return [done[i] for i in ids]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=10.0, help="HASTE_SUBMIT_RATE_PER_S")
    parser.add_argument("--burst", type=int, default=100, help="HASTE_SUBMIT_BURST")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="haste-load-", ignore_cleanup_errors=True) as tmp:
        result = run(args.jobs, args.rate, args.burst, Path(tmp))
    print(f"\nload: {result['jobs']} jobs in one burst, rate {args.rate}/s, burst {args.burst}, {os.cpu_count()} cores")
    print(f"  succeeded             {result['succeeded']}/{result['jobs']}")
    print(f"  refused with 429      {result['refused_429']} (all retried after Retry-After and accepted)")
    print(f"  answered 503          {result['refused_503']} (storage slower than the API's budget; retried)")
    print(f"  all accepted after    {result['accepted_after_s']:.1f}s; all finished after {result['elapsed_s']:.1f}s")
    print(f"  acceptance rate       {result['acceptance_per_s']:.1f} jobs/s until all were accepted (while jobs ran)")
    background: dict[str, Counter[str]] = result["background"]
    calls = result["calls"] - sum(background.values(), Counter())  # what the jobs themselves sent
    print(f"  storage calls per job {sum(calls.values()) / result['jobs']:.1f} (the jobs' own, every host process), "
          "by operation:")  # fmt: skip
    for name, count in calls.most_common():
        print(f"    {name:<28} {count / result['jobs']:6.2f}")
    for source, counts in background.items():
        detail = ", ".join(f"{name} {count}" for name, count in counts.most_common())
        print(f"  not the jobs': {source:<14} {sum(counts.values()):6d} calls in all ({detail or 'none'})")
    first, last = result["rss_first_third_mb"], result["rss_last_third_mb"]
    print(f"  host memory (MB)      idle {result['rss_start_mb']:.0f}, peak {result['rss_peak_mb']:.0f}; "
          f"median first third {first:.0f}, last third {last:.0f}")  # fmt: skip
    print(f"  polls per job         mean {result['polls_mean']:.2f}, max {result['polls_max']} "
          f"(budget {POLL_BUDGET_PER_JOB})")  # fmt: skip
    ok = result["succeeded"] == result["jobs"] and result["polls_max"] <= POLL_BUDGET_PER_JOB
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
