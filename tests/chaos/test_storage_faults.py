"""Storage that fails the way real storage does, behind a whole stack, while bursts of jobs arrive.

A fault-injecting proxy (:mod:`hastegeo_dev.testing.fault_proxy`) stands in front of
Azurite's blob and queue endpoints, and the host and its API reach storage only through
it. Faults (seconds of delay, ``500`` and ``503`` answers, connections reset halfway
through a response, requests that hang, bandwidth throttling) are switched on for bursts
of submissions and while the jobs run, and off in between. Every job must be accepted
exactly once per idempotency key (a client retries a ``503`` with the same key), reach a
terminal state, succeed, and leave no leak behind (ground truth); every API answer is a
success or a ``503`` with ``Retry-After``, within the budget the API's storage calls have.
A job stored whose submit message could not be sent is accepted all the same and started by
the reconciler (ADR 0031). Each proxy's request log is written beside the host's log.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient, ApiError
from hastegeo.runtime import API_STORAGE_BUDGET
from hastegeo_dev.devhost.azurite import ACCOUNT_KEY, ACCOUNT_NAME
from hastegeo_dev.stack import LocalStack
from hastegeo_dev.testing.fault_proxy import FaultPlan, FaultProxy

from . import ground_truth
from .checks import assert_clean, check_jobs
from .conftest import CHAOS_JOBS, Outcome
from .ground_truth import starts_env
from .test_chaos import stack_scene, wait_terminal

pytestmark = [
    pytest.mark.azurite,
    pytest.mark.slow,
    # A job whose submit message failed waits for the reconciler's timer (a minute), whose pass under
    # faults takes minutes of the SDK's patient retries: the scenario's own bound, not the suite's.
    pytest.mark.timeout(900),
]

# One budgeted storage call, retries included, when storage never answers (tests/integration/test_api_outage.py)...
CALL_BOUND_S = (API_STORAGE_BUDGET.retries + 1) * (
    API_STORAGE_BUDGET.connect_timeout_s + API_STORAGE_BUDGET.read_timeout_s
) + API_STORAGE_BUDGET.retries * API_STORAGE_BUDGET.backoff_s
# ... and a submission makes three in a row at most (the index entries in parallel, the document, the message).
ANSWER_BOUND_S = 3 * CALL_BOUND_S + 2
SETTLE_S = 60.0
PLAN = FaultPlan(rate=0.12, delay_s=2.0, hang_s=6.0, throttle_bps=32 * 1024)
# What a client retries with the same Idempotency-Key: nothing else may come back, not even a 500.
RETRIED = (503,)
BODY = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.bin"}]}


def proxied(connection_string: str, blob: FaultProxy, queue: FaultProxy) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{blob.port}/{ACCOUNT_NAME};"
        f"QueueEndpoint=http://127.0.0.1:{queue.port}/{ACCOUNT_NAME};"
    )


class Answers:
    """Every API answer's status and time: successes, and 503s with Retry-After."""

    def __init__(self) -> None:
        self.statuses: dict[int, int] = {}
        self.slowest_s = 0.0
        self.bad: list[str] = []

    def submit(self, client: ApiClient, key: str, deadline_s: float = 120.0) -> str:
        """Submit until accepted, as a client would: a 503 is retried with the same key after Retry-After."""
        stop = time.monotonic() + deadline_s
        while True:
            started = time.monotonic()
            try:
                job: dict[str, Any] = client.submit(BODY, idempotency_key=key)
            except ApiError as exc:
                self.note(exc.status, time.monotonic() - started, key)
                if exc.status == 503 and "Retry-After" not in exc.headers:
                    self.bad.append(f"{key}: 503 without Retry-After")
                if exc.status not in RETRIED:
                    self.bad.append(f"{key}: {exc.status} {exc}")
                    raise
                assert time.monotonic() < stop, f"{key} still refused after {deadline_s}s"
                time.sleep(min(2.0, float(exc.headers.get("Retry-After", 1))))
                continue
            self.note(202, time.monotonic() - started, key)
            return str(job["id"])

    def note(self, status: int, took: float, key: str) -> None:
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.slowest_s = max(self.slowest_s, took)
        if took > ANSWER_BOUND_S:
            self.bad.append(f"{key}: answered {status} after {took:.1f}s (bound {ANSWER_BOUND_S:.0f}s)")


def test_storage_faults_in_bursts(tmp_path: Path, outcome: Outcome) -> None:
    settings = {"HASTE_LOCAL_SLOTS": "2", "HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2"}
    settings.update(starts_env(tmp_path / "starts"))
    stack = LocalStack(tmp_path, settings=settings, lease_seconds=5)
    stack.azurite.start()
    blob_proxy = FaultProxy(urlsplit(stack.azurite.blob_url).port or 0, seed=26).start()
    queue_proxy = FaultProxy(urlsplit(stack.azurite.queue_url).port or 0, seed=62).start()
    proxies = (blob_proxy, queue_proxy)
    rng = random.Random(2026)
    answers = Answers()
    try:
        stack.extra["AzureWebJobsStorage"] = proxied(stack.azurite.connection_string, blob_proxy, queue_proxy)
        with stack:
            direct = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
            direct.get_container_client("haste-inputs").upload_blob("p1/a.bin", rng.randbytes(256 << 10))
            client = ApiClient(stack.base_url, timeout=ANSWER_BOUND_S + 10)
            keys = [f"fault-{i}" for i in range(CHAOS_JOBS)]
            ids: dict[str, str] = {}
            bursts = [keys[i::3] for i in range(3)]
            for number, burst in enumerate(bursts):
                plan = PLAN if number % 2 == 0 else FaultPlan()  # faults on, off, on
                for proxy in proxies:
                    proxy.set_plan(plan)
                for key in burst:
                    ids[key] = answers.submit(client, key)
            time.sleep(rng.uniform(2, 4))  # the jobs run with faults on for a while ...
            for proxy in proxies:
                proxy.set_plan(FaultPlan())  # ... then storage recovers
            finals = wait_terminal(client, [ids[key] for key in keys])
            # A message whose delete failed under faults comes back after its lease and host.json's
            # visibility timeout, then goes: the queues get a minute to drain, not the default half.
            scene = stack_scene(stack, tmp_path)
            scene.settle_s = SETTLE_S
            ground_truth.check(outcome, scene)
            stored = [
                blob.name for blob in direct.get_container_client("haste-jobs").list_blobs(name_starts_with="jobs/")
            ]
    finally:
        for proxy, name in zip(proxies, ("blob", "queue"), strict=True):
            proxy.stop()
            (tmp_path / f"proxy-{name}.log").write_text("\n".join(proxy.log_lines()) + "\n")
    injected = blob_proxy.injected + queue_proxy.injected
    outcome.notes.append(f"faults injected: {dict(injected)}; API answers: {answers.statuses}")
    outcome.notes.append(f"slowest answer {answers.slowest_s:.1f}s")
    check_jobs(outcome, finals, tmp_path / "local")
    assert len(set(ids.values())) == len(keys)  # one job per key, however often it was retried
    assert len(stored) == len(keys), stored  # and nothing stored beside them
    assert sum(injected.values()) > 0, "no fault was injected"
    assert not answers.bad, answers.bad
    assert outcome.succeeded == len(keys), outcome.notes
    assert_clean(outcome)
    ground_truth.assert_true(outcome)
