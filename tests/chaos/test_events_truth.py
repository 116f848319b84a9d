"""Job events under a killed host: every stored change has its event, none without (from ground truth).

The host is killed at random moments while jobs run, so some die between storing a change and
publishing its event. Once every job has ended, the ground truth is read while a host still
drains the queues; then, with no host left, the reconciler's sweep (run here as its timer
would, past the publish grace) publishes what they left, and the job documents and the
jobs-events queue are read directly with the storage SDK and compared, and the store's index
against the documents again: every ended job's ``active/`` entry gone (ADR 0024).
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from hastegeo.cli.client import ApiClient
from hastegeo.pipeline.journal import PUBLISH_GRACE_S
from hastegeo.settings.load import load_settings
from hastegeo.store.queues import EVENTS_QUEUE
from hastegeo_dev.stack import LocalStack
from tests.support.runtime import development_runtime

from . import ground_truth
from .conftest import CHAOS_JOBS, Outcome
from .events_truth import check_events
from .ground_truth import starts_env
from .test_chaos import stack_scene, wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]


def test_events_match_the_stored_changes_after_a_killed_host(tmp_path: Path, outcome: Outcome) -> None:
    settings = {"HASTE_LOCAL_SLOTS": "2", "HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2"}
    settings.update(starts_env(tmp_path / "starts"))
    with LocalStack(tmp_path, settings=settings, lease_seconds=2) as stack:
        connection = stack.azurite.connection_string
        blobs = BlobServiceClient.from_connection_string(connection)
        blobs.get_container_client("haste-inputs").upload_blob("p1/a.bin", random.Random(3).randbytes(1 << 20))
        client = ApiClient(stack.base_url)
        body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.bin"}]}
        ids = [client.submit(body, idempotency_key=f"events-{i}")["id"] for i in range(CHAOS_JOBS)]
        rng = random.Random(11)
        for _ in range(3):
            time.sleep(rng.uniform(0.2, 1.5))
            assert stack.host is not None
            stack.host.kill()
            stack.start_host()
            client = ApiClient(stack.base_url)
        finals = wait_terminal(client, ids)
        scene = stack_scene(stack, tmp_path)
        ground_truth.check(outcome, scene)  # a host drains the queues meanwhile
        assert stack.host is not None
        stack.host.kill()  # nothing writes any more: what is stored now is the truth
        sweeper = development_runtime(load_settings({"AzureWebJobsStorage": connection}))
        assert sweeper.journal.totals is not None
        sweeper.journal.totals.fold()  # as the reconciler's pass does first: ended jobs' markers (ADR 0051)
        sweeper.journal.sweep(datetime.now(UTC) + timedelta(seconds=PUBLISH_GRACE_S + 1))
        jobs = blobs.get_container_client(sweeper.settings.storage.jobs_container)
        truth = check_events(jobs, QueueClient.from_connection_string(connection, EVENTS_QUEUE))
        # After the sweep no ended job keeps its active entry for events still to publish: judged strictly.
        outcome.truth["store"] = ground_truth.store_after_sweep(outcome, scene)
    outcome.jobs = len(finals)
    outcome.terminal = sum(1 for job in finals if job["state"] in ("succeeded", "failed", "cancelled"))
    outcome.succeeded = sum(1 for job in finals if job["state"] == "succeeded")
    outcome.lost_events = len(truth.missing)
    outcome.notes.append(
        f"{truth.changes} stored changes, {truth.events} events read, {truth.duplicates} duplicate deliveries"
    )
    assert truth.changes >= 5 * len(ids)  # queued … succeeded, for each job at least
    assert truth.problems() == [], truth.problems()[:20]
    assert outcome.terminal == len(ids)
    ground_truth.assert_true(outcome)
