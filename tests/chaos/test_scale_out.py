"""Scale-out: two development hosts on the same storage split one burst.

Like two Function App instances, each host serves the API and competes for the same
queues. Every job must end once: none lost, none run twice (the local backend writes one
line per workload it starts), and both hosts must have taken a share of the work
(counted from each host's own storage calls).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient
from hastegeo_dev.stack import HostProcess, LocalStack, free_port
from tests.bench import storage_calls

from . import ground_truth
from .checks import assert_clean, check_jobs
from .conftest import CHAOS_JOBS, Outcome
from .ground_truth import starts_env
from .test_chaos import stack_scene, wait_terminal

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
BENCH = Path(storage_calls.__file__).parent
REPO = BENCH.parents[1]


def test_two_hosts_split_one_burst_without_running_a_job_twice(tmp_path: Path, outcome: Outcome) -> None:
    jobs = max(20, min(CHAOS_JOBS, 60))
    settings = {"HASTE_LOCAL_SLOTS": "4", "HASTE_POLL_INITIAL_S": "1", "HASTE_POLL_MAX_S": "2"}
    path = os.pathsep.join([str(BENCH / "counting_site"), str(REPO), os.environ.get("PYTHONPATH", "")])
    starts = starts_env(tmp_path / "starts", path)  # its sitecustomize hands other processes to the counter's
    calls = {name: tmp_path / f"calls-{name}" for name in ("a", "b")}
    for folder in calls.values():
        folder.mkdir()
    with LocalStack(tmp_path, settings={**settings, **starts, "HASTE_BENCH_CALLS_DIR": str(calls["a"])}) as stack:
        env = {**stack.env, "HASTE_BENCH_CALLS_DIR": str(calls["b"])}
        second = HostProcess(stack.root, env, free_port(), tmp_path / "host-b.log").start()
        try:
            blobs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
            blobs.get_container_client("haste-inputs").upload_blob("p1/a.txt", b"alpha")
            clients = [ApiClient(stack.base_url), ApiClient(second.base_url)]
            body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
            ids = [clients[i % 2].submit(body, idempotency_key=f"split-{i}")["id"] for i in range(jobs)]
            finals = wait_terminal(clients[1], ids)
            ground_truth.check(outcome, stack_scene(stack, tmp_path))
        finally:
            second.stop()
    check_jobs(outcome, finals, tmp_path / "local")
    assert outcome.succeeded == jobs, outcome.notes
    assert_clean(outcome)
    ground_truth.assert_true(outcome)
    handled = {name: storage_calls.read_dir(folder)["DELETE queue message"] for name, folder in calls.items()}
    assert all(count > 0 for count in handled.values()), handled  # both hosts consumed queue messages
