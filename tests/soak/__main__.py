"""``make soak``: the stack at a steady rate for a long while, storage faults switched on at random.

Azurite behind the fault proxy (:mod:`hastegeo_dev.testing.fault_proxy`), the development
host in front of it, and one job submitted every ``1/SOAK_RATE`` seconds for
``SOAK_MINUTES`` minutes (default 30), each through the API with an idempotency key and
retried as a client would. Every ``SOAK_SAMPLE_S`` seconds it samples the host process
(resident memory, open files, threads, from ``/proc``) and the queues' depth, and prints
the line. Faults are switched on for a random share of the time.

At the end it waits for every job to end, runs the chaos suite's ground-truth checks, and
holds the growth between the first and the last quarter of the run to the bounds of
docs/adr/0027-soak-bounds.md. Not part of ``make test``.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo_dev.stack import LocalStack
from hastegeo_dev.testing.fault_proxy import FaultPlan, FaultProxy
from tests.chaos import ground_truth
from tests.chaos.checks import check_jobs
from tests.chaos.conftest import Outcome
from tests.chaos.ground_truth import starts_env
from tests.chaos.test_chaos import stack_scene, wait_terminal
from tests.chaos.test_storage_faults import PLAN, SETTLE_S, Answers, proxied

# Growth allowed from the first quarter's median to the last quarter's (ADR 0027).
MEMORY_GROWTH_MB = 40.0
MEMORY_GROWTH_SHARE = 0.25
OPEN_FILES_GROWTH = 16
THREADS_GROWTH = 16
QUEUE_DEPTH_END = 0  # once the jobs ended (checked by the ground truth)


def sample(pid: int) -> tuple[float, int, int]:
    """Resident MB, open files and threads of process ``pid``."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    rss_mb = int(status["VmRSS"].split()[0]) / 1024
    return rss_mb, len(os.listdir(f"/proc/{pid}/fd")), int(status["Threads"])


def growth(values: list[float]) -> float:
    quarter = max(1, len(values) // 4)
    return statistics.median(values[-quarter:]) - statistics.median(values[:quarter])


def main() -> int:
    minutes = float(os.environ.get("SOAK_MINUTES", "30"))
    rate = float(os.environ.get("SOAK_RATE", "0.5"))
    every = float(os.environ.get("SOAK_SAMPLE_S", "30"))
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    rng = random.Random(int(os.environ.get("SOAK_SEED", "19")))
    settings = {"HASTE_LOCAL_SLOTS": "2", "HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "5"}
    settings.update(starts_env(work / "starts"))
    stack = LocalStack(work, settings=settings, lease_seconds=10)
    stack.azurite.start()
    proxies = [
        FaultProxy(urlsplit(url).port or 0, seed=rng.randrange(1 << 30)).start()
        for url in (stack.azurite.blob_url, stack.azurite.queue_url)
    ]
    stack.extra["AzureWebJobsStorage"] = proxied(stack.azurite.connection_string, *proxies)
    samples: list[tuple[float, int, int, int]] = []
    answers = Answers()
    ids: list[str] = []
    outcome = Outcome("soak")
    print(f"soak: {minutes:g} min at {rate:g} job/s, work in {work}")
    print(f"{'minute':>7}{'jobs':>7}{'faults':>8}{'rss MB':>9}{'files':>7}{'threads':>9}{'queued':>8}")
    try:
        with stack:
            queues = QueueServiceClient.from_connection_string(stack.azurite.connection_string)
            BlobServiceClient.from_connection_string(stack.azurite.connection_string).get_container_client(
                "haste-inputs"
            ).upload_blob("p1/a.bin", rng.randbytes(64 << 10), overwrite=True)
            client = ApiClient(stack.base_url, timeout=60)
            started = time.monotonic()
            end = started + minutes * 60
            next_sample = started
            faults_on = False
            while time.monotonic() < end:
                if rng.random() < 0.05:  # about every 20 submissions, faults flip
                    faults_on = not faults_on
                    for proxy in proxies:
                        proxy.set_plan(PLAN if faults_on else FaultPlan())
                ids.append(answers.submit(client, f"soak-{len(ids)}"))
                if time.monotonic() >= next_sample:
                    assert stack.host is not None
                    assert stack.host.process is not None
                    rss, files, threads = sample(stack.host.process.pid)
                    depth = sum(ground_truth.queue_depths(queues).values())
                    samples.append((rss, files, threads, depth))
                    minute = (time.monotonic() - started) / 60
                    injected = sum(sum(proxy.injected.values()) for proxy in proxies)
                    print(
                        f"{minute:>7.1f}{len(ids):>7}{injected:>8}{rss:>9.1f}{files:>7}{threads:>9}{depth:>8}",
                        flush=True,
                    )
                    next_sample += every
                time.sleep(max(0.0, 1 / rate - 0.01))
            for proxy in proxies:
                proxy.set_plan(FaultPlan())
            finals = wait_terminal(client, ids, stall=600)
            scene = stack_scene(stack, work)
            scene.settle_s = SETTLE_S
            ground_truth.check(outcome, scene)
    finally:
        for proxy in proxies:
            proxy.stop()
    check_jobs(outcome, finals, work / "local")
    rss_growth = growth([s[0] for s in samples])
    files_growth = growth([float(s[1]) for s in samples])
    threads_growth = growth([float(s[2]) for s in samples])
    first_rss = statistics.median([s[0] for s in samples[: max(1, len(samples) // 4)]])
    memory_bound = max(MEMORY_GROWTH_MB, first_rss * MEMORY_GROWTH_SHARE)
    verdicts = {
        f"memory grew {rss_growth:+.1f} MB (bound {memory_bound:.0f})": rss_growth <= memory_bound,
        f"open files grew {files_growth:+.0f} (bound {OPEN_FILES_GROWTH})": files_growth <= OPEN_FILES_GROWTH,
        f"threads grew {threads_growth:+.0f} (bound {THREADS_GROWTH})": threads_growth <= THREADS_GROWTH,
        f"{outcome.terminal}/{outcome.jobs} jobs ended, {outcome.succeeded} succeeded": outcome.succeeded == len(ids),
        f"API: {answers.statuses}, slowest {answers.slowest_s:.1f}s": not answers.bad,
        f"ground truth: {outcome.truth}": not any(outcome.truth.values()),
    }
    for text, met in verdicts.items():
        print(f"{'met ' if met else 'MISSED'}  {text}")
    for note in outcome.notes[:20]:
        print(f"  {note}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
