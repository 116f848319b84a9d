"""Where the time of one accepted job goes: a burst of ``POST /api/jobs`` against a running stack.

Starts the same stack as ``pipeline_bench`` (Azurite, the development host with its
worker processes, the local backend running each accepted job at once), submits N
``artifacts`` jobs at concurrency C, and reports the acceptance rate and the CPU time
per accepted request of each process group over the burst: the host process (HTTP
server and functions), its queue worker processes, the local backend's job processes,
Azurite, and this client. With ``--profile`` every thread of the host and its workers
runs under a CPU-time profiler (``tests.bench.thread_profile``; it slows them) and the
host's CPU per request is broken down by component (azure SDK, validation, JSON, ...).

    python -m tests.bench.accept_bench --jobs 300 --concurrency 8 [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import socketserver
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient, ApiError
from hastegeo.runtime import ensure_storage, reset_runtime
from hastegeo.settings.load import load_settings
from hastegeo_dev.devhost.host import DevHost
from hastegeo_dev.stack import LocalStack
from tests.bench import thread_profile
from tests.bench.pipeline_bench import bench_stack, patiently
from tests.bench.process_cpu import host_worker

BENCH = Path(thread_profile.__file__).parent
GROUPS = ("host (HTTP + functions)", "host queue workers", "jobs (local backend)", "azurite", "bench client")


def _cpu(process: psutil.Process, *, reaped: bool = False) -> float:
    """User + system CPU seconds of ``process`` (``reaped``: of the children it has reaped); 0 once it is gone."""
    try:
        times = process.cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.children_user + times.children_system if reaped else times.user + times.system)


def cpu_by_group(stack: LocalStack, seen: dict[int, tuple[str, float]]) -> None:
    """Record each process's CPU seconds so far under its group (in ``seen``, by pid; the last value wins)."""
    host = stack.host.process if stack.host is not None else None
    roots: list[tuple[str, int | None]] = [("host", host.pid if host else None)]
    azurite = getattr(stack.azurite, "_process", None)
    roots.append(("azurite", azurite.pid if azurite is not None else None))
    for kind, pid in roots:
        if pid is None:
            continue
        try:
            root = psutil.Process(pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for process in processes:
            if kind == "azurite":
                group = "azurite"
            elif process.pid == pid:
                group = GROUPS[0]
            else:
                group = GROUPS[1] if host_worker(process) else GROUPS[2]
            seen[process.pid] = (group, _cpu(process))
            if group in GROUPS[:2]:  # job processes that ended and were reaped count in their parent
                seen[-process.pid] = (GROUPS[2], _cpu(process, reaped=True))
    seen[os.getpid()] = (GROUPS[4], _cpu(psutil.Process()))


def totals(seen: dict[int, tuple[str, float]]) -> dict[str, float]:
    out = dict.fromkeys(GROUPS, 0.0)
    for group, seconds in seen.values():
        out[group] += seconds
    return out


def run(jobs: int, concurrency: int, workdir: Path, profile: bool) -> dict[str, Any]:
    settings = bench_stack(8)
    if profile:
        settings["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(BENCH / "profiling_site"), str(BENCH.parents[1]), os.environ.get("PYTHONPATH")])
        )
        settings["HASTE_BENCH_PROFILE_DIR"] = str(workdir / "profiles")
    with LocalStack(workdir, settings=settings) as stack:
        blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
        blobs.get_container_client("haste-inputs").upload_blob("bench/input.txt", b"x" * 1024, overwrite=True)
        client = ApiClient(stack.base_url, timeout=60)
        request = {"workload": "artifacts", "projectId": "bench", "inputs": [{"blob": "bench/input.txt"}]}
        for i in range(20):  # warm-up: imports, clients, queues
            patiently(lambda i=i: client.submit(request, idempotency_key=f"warm-{i}"))
        time.sleep(2)
        profiles = workdir / "profiles"
        profiled_before = thread_profile.components_in(profiles) if profile else {}
        before: dict[int, tuple[str, float]] = {}
        cpu_by_group(stack, before)
        started = time.time()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            failed = sum(pool.map(lambda i: submit(client, request, f"b-{i}"), range(jobs)))
        accepted_s = time.time() - started
        after = dict(before)
        cpu_by_group(stack, after)
        if profile:
            time.sleep(1.5)  # the next profile snapshot covers the end of the burst
            profiled_after = thread_profile.components_in(profiles)
    # Processes that ended during the burst (finished jobs) count up to their last sample only.
    spent = {g: totals(after)[g] - totals(before)[g] for g in GROUPS}
    result: dict[str, Any] = {
        "jobs": jobs,
        "accepted_s": accepted_s,
        "rate": jobs / accepted_s,
        "cpu": spent,
        "failed_500": failed,
    }
    if profile:
        result["profile"] = {
            name: counts - profiled_before.get(name, Counter()) for name, counts in profiled_after.items()
        }
    return result


def profile_accept(
    jobs: int, concurrency: int, workdir: Path
) -> tuple[dict[str, float], float, Counter[str], pstats.Stats | None]:
    """CPU of the accept path alone, by component: the host in this process, HTTP only (no queue
    triggers, so nothing else runs), each request's server thread under a CPU-time profiler.

    Returns the requests/s, CPU seconds by component and the merged profile.
    """
    stack = LocalStack(workdir)
    stack.azurite.start()
    profiles: list[cProfile.Profile] = []
    original = socketserver.ThreadingMixIn.process_request_thread

    def profiled(self: Any, request: Any, client_address: Any) -> None:
        profile = cProfile.Profile(time.thread_time)
        profile.enable()
        try:
            original(self, request, client_address)
        finally:
            profile.disable()
            profiles.append(profile)

    saved = dict(os.environ)
    os.environ.update(stack.env)
    try:
        ensure_storage(load_settings(os.environ))
        reset_runtime()
        host = DevHost("function_app:app", app_dir=stack.root, run_queues=False, run_timers=False)
        with host:
            client = ApiClient(host.base_url, timeout=60)
            request = {"workload": "artifacts", "projectId": "bench", "inputs": [{"blob": "bench/input.txt"}]}
            for i in range(20):
                client.submit(request, idempotency_key=f"warm-{i}")
            measured = measure(client, request, jobs, concurrency, "m", stack)
            socketserver.ThreadingMixIn.process_request_thread = profiled  # type: ignore[method-assign]
            started = time.time()
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                list(pool.map(lambda i: client.submit(request, idempotency_key=f"p-{i}"), range(jobs)))
            rate = jobs / (time.time() - started)
    finally:
        socketserver.ThreadingMixIn.process_request_thread = original  # type: ignore[method-assign]
        os.environ.clear()
        os.environ.update(saved)
        reset_runtime()
        stack.azurite.stop()
    stats = thread_profile.merge(profiles)
    return measured, rate, thread_profile.by_component(stats) if stats is not None else Counter(), stats


def measure(
    client: ApiClient, request: dict[str, Any], jobs: int, concurrency: int, prefix: str, stack: LocalStack
) -> dict[str, float]:
    """One unprofiled burst against the in-process host: requests/s and CPU ms per request of the
    server (this process less the client threads), Azurite and the client."""
    client_cpu: list[float] = []

    def one(i: int) -> None:
        started = time.thread_time()
        client.submit(request, idempotency_key=f"{prefix}-{i}")
        client_cpu.append(time.thread_time() - started)

    azurite = psutil.Process(stack.azurite._process.pid) if stack.azurite._process is not None else None
    nodes = [azurite, *azurite.children(recursive=True)] if azurite is not None else []
    me = psutil.Process()
    before_me, before_node = _cpu(me), sum(_cpu(node) for node in nodes)
    started = time.time()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(jobs)))
    wall = time.time() - started
    spent_me, spent_node = _cpu(me) - before_me, sum(_cpu(node) for node in nodes) - before_node
    return {
        "rate": jobs / wall,
        "server": 1000 * (spent_me - sum(client_cpu)) / jobs,
        "client": 1000 * sum(client_cpu) / jobs,
        "azurite": 1000 * spent_node / jobs,
    }


def stages(stats: pstats.Stats) -> dict[str, float]:
    """The request thread's CPU split into storage calls, function code and the host's HTTP work."""
    total = thread_profile.cumulative(stats, "socketserver.py", "process_request_thread")
    storage = thread_profile.cumulative(stats, "azure/core/tracing/decorator.py", "wrapper_use_tracer")
    function = thread_profile.cumulative(stats, "devhost/functions.py", "invoke")
    output = thread_profile.cumulative(stats, "devhost/outputs.py", "send")
    return {
        "storage calls (azure SDK, requests, sockets)": storage,
        "function code besides its storage calls": function - (storage - output),
        "dev host: HTTP parsing, routing, response": total - function - output,
    }


def submit(client: ApiClient, request: dict[str, Any], key: str) -> int:
    """Submit until accepted (503 and 500 are retried with the same key); returns how many 500s it met."""
    failures = 0
    while True:
        try:
            patiently(lambda: client.submit(request, idempotency_key=key))
            return failures
        except ApiError as exc:
            if exc.status != 500:
                raise
            failures += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", action="store_true", help="profile the accept path alone, in this process")
    parser.add_argument("--profile-stack", action="store_true", help="profile every thread of the stack (slow)")
    parser.add_argument("--top", type=int, default=0, help="with --profile: print the top functions too")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (host log, profiles)")
    args = parser.parse_args()
    if args.profile:
        with tempfile.TemporaryDirectory(prefix="haste-accept-", ignore_cleanup_errors=True) as tmp:
            measured, rate, components, stats = profile_accept(args.jobs, args.concurrency, Path(tmp))
        print(f"\naccept path alone (HTTP only, no job runs): {args.jobs} requests at concurrency {args.concurrency}")
        print(f"  unprofiled: {measured['rate']:.1f} requests/s; CPU ms per request: host {measured['server']:.2f}, "
              f"azurite {measured['azurite']:.2f}, client {measured['client']:.2f}")  # fmt: skip
        print(f"  profiled:   {rate:.1f} requests/s")
        total = sum(components.values()) or 1.0
        print(f"  server CPU per request {1000 * total / args.jobs:.2f} ms (profiled, so inflated), by component:")
        for component, seconds in components.most_common():
            print(f"    {component:<44} {1000 * seconds / args.jobs:7.3f} {100 * seconds / total:5.1f} %")
        if stats is not None:
            where = stages(stats)
            print("  where the request thread's CPU goes (cumulative, profiled):")
            for stage, seconds in where.items():
                print(f"    {stage:<44} {1000 * seconds / args.jobs:7.3f} {100 * seconds / total:5.1f} %")
        if stats is not None and args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            stats.dump_stats(str(args.keep / "accept.prof"))
        if stats is not None and args.top:
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)
        return 0
    with tempfile.TemporaryDirectory(prefix="haste-accept-", ignore_cleanup_errors=True) as tmp:
        result = run(args.jobs, args.concurrency, args.keep or Path(tmp), args.profile_stack)
    print(f"\naccept: {args.jobs} POST /api/jobs at concurrency {args.concurrency}, {os.cpu_count()} cores")
    print(f"  all accepted after   {result['accepted_s']:.2f} s = {result['rate']:.1f} requests/s")
    print(f"  answered 500         {result['failed_500']} (retried with the same Idempotency-Key)")
    print("  CPU ms per accepted request, by process (over the burst; jobs ran meanwhile):")
    for group, seconds in result["cpu"].items():
        print(f"    {group:<28} {1000 * seconds / args.jobs:7.2f}")
    print(f"    {'all':<28} {1000 * sum(result['cpu'].values()) / args.jobs:7.2f}")
    for name, profile in sorted(result.get("profile", {}).items()):
        total = sum(profile.values()) or 1.0
        print(f"  {name}: CPU ms per accepted request by component over the burst (profiled, so inflated):")
        for component, seconds in profile.most_common():
            print(f"    {component:<44} {1000 * seconds / args.jobs:7.2f} {100 * seconds / total:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
