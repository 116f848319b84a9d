"""End to end: the development host in its own process, Azurite, real workloads, the HTTP API."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hastegeo.cli.client import ApiClient, ApiError
from hastegeo_dev.stack import LocalStack
from tests.support.runtime import development_runtime

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
TERMINAL = {"succeeded", "failed", "cancelled"}


SETTINGS = {
    "HASTE_LOCAL_SLOTS": "1",
    "HASTE_POLL_INITIAL_S": "1",
    "HASTE_POLL_MAX_S": "2",
    "HASTE_CORS_ALLOWED_ORIGINS": "https://ui.example",
    # One test acts as an outsider by sending its own principal, as App Service would pass it.
    "HASTE_DEV_TRUST_CLIENT_PRINCIPAL": "true",
}


@contextmanager
def _started(workdir: Path) -> Iterator[LocalStack]:
    # A short lease: after a SIGKILL, in-flight messages come back within seconds.
    with LocalStack(workdir, settings=dict(SETTINGS), lease_seconds=3) as running:
        blobs = BlobServiceClient.from_connection_string(running.azurite.connection_string)
        inputs = blobs.get_container_client("haste-inputs")
        inputs.upload_blob("p1/small.txt", b"small input")
        inputs.upload_blob("up/small.txt", b"small input of the upstream project")
        # Random bytes do not compress: zipping this takes long enough to be caught mid-run.
        inputs.upload_blob("p1/large.bin", _random_bytes(24 * 1024 * 1024))
        yield running


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """One stack for the module's tests (a stack's start costs seconds of CPU). Each test waits for
    the jobs it submits, so the single slot is free when the next one starts, and reads only its own."""
    with _started(tmp_path_factory.mktemp("stack")) as running:
        yield running


@pytest.fixture
def own_stack(tmp_path: Path) -> Iterator[LocalStack]:
    """A stack for one test alone: the test that kills and restarts its host."""
    with _started(tmp_path) as running:
        yield running


def _random_bytes(size: int) -> bytes:
    import random

    return random.Random(7).randbytes(size)


def wait_all(
    client: ApiClient, ids: list[str], timeout: float = 90, local_root: Path | None = None
) -> dict[str, dict[str, object]]:
    deadline = time.monotonic() + timeout
    finals: dict[str, dict[str, object]] = {}
    while len(finals) < len(ids):
        if time.monotonic() > deadline:
            unfinished = {i: client.get(i) for i in ids if i not in finals}
            lines = {i: (j["state"], [e["message"] for e in j["history"]][-4:]) for i, j in unfinished.items()}
            raise AssertionError(f"unfinished after {timeout}s: {lines}{_local_files(local_root, list(unfinished))}")
        for job_id in ids:
            if job_id not in finals:
                job = client.get(job_id)
                if job["state"] in TERMINAL:
                    finals[job_id] = job
        time.sleep(0.2)
    return finals


def _local_files(root: Path | None, ids: list[str]) -> str:
    """What the local backend's files say of unfinished jobs: the first thing to read when one is stuck."""
    if root is None:
        return ""
    listed = {folder: sorted(p.name for p in (root / folder).iterdir()) for folder in ("queue", "active")}
    states = {i: sorted(p.name for p in (root / "jobs" / f"haste-{i}" / "state").glob("*")) for i in ids}
    return f"; local backend: {listed}, job state files: {states}"


def test_a_job_travels_the_whole_path(stack: LocalStack) -> None:
    client = ApiClient(stack.base_url)
    job = client.submit({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/small.txt"}]})
    final = wait_all(client, [job["id"]])[job["id"]]
    assert final["state"] == "succeeded"
    states = [event["state"] for event in final["history"]]  # type: ignore[index, union-attr]
    for expected in ("queued", "submitting", "running", "postprocessing", "succeeded"):
        assert expected in states
    assert states == sorted(states, key=["queued", "submitting", "running", "postprocessing", "succeeded"].index)
    with pytest.raises(ApiError) as caught:
        client.submit({"workload": "artifacts", "projectId": "p1", "state": "succeeded"})
    assert caught.value.status == 400
    assert caught.value.body["errors"][0]["field"] == "state"


def test_a_killed_host_restarted_mid_job_still_finishes_every_job(own_stack: LocalStack, tmp_path: Path) -> None:
    stack = own_stack
    client = ApiClient(stack.base_url)
    request = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/large.bin"}]}
    ids = [client.submit(request, idempotency_key=f"kill-{i}")["id"] for i in range(3)]
    deadline = time.monotonic() + 60
    while client.get(ids[0])["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert stack.host is not None
    stack.host.kill()  # SIGKILL: in-flight messages are neither finished nor released
    stack.start_host()
    client = ApiClient(stack.base_url)
    finals = wait_all(client, ids, timeout=120, local_root=tmp_path / "local")
    outcome = {job_id: (job["state"], job.get("reason")) for job_id, job in finals.items()}
    assert {state for state, _ in outcome.values()} == {"succeeded"}, outcome
    for job_id in ids:
        launches = tmp_path / "local" / "jobs" / f"haste-{job_id}" / "state" / "launches.log"
        assert len(launches.read_text().splitlines()) == 1, job_id  # each workload ran exactly once


def test_cancel_through_the_api(stack: LocalStack) -> None:
    client = ApiClient(stack.base_url)
    request = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/large.bin"}]}
    first = client.submit(request, idempotency_key="c1")
    second = client.submit(request, idempotency_key="c2")  # waits for the single slot
    client.cancel(second["id"])
    final = wait_all(client, [first["id"], second["id"]])
    assert final[first["id"]]["state"] == "succeeded"
    assert final[second["id"]]["state"] == "cancelled"
    assert final[second["id"]]["outputs"] == []


def test_cors_preflight_follows_the_settings(stack: LocalStack) -> None:
    import urllib.request

    def preflight(origin: str) -> dict[str, str]:
        request = urllib.request.Request(
            f"{stack.base_url}/api/jobs",
            method="OPTIONS",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return dict(response.headers)
        except urllib.error.HTTPError as exc:
            return dict(exc.headers)

    allowed = preflight("https://ui.example")
    assert allowed.get("Access-Control-Allow-Origin") == "https://ui.example"
    assert "POST" in allowed.get("Access-Control-Allow-Methods", "")
    assert "Access-Control-Allow-Origin" not in preflight("https://evil.example")


def test_poison_and_upstream_queues_through_the_host(stack: LocalStack) -> None:
    from azure.storage.queue import QueueClient

    from hastegeo.store.queues import GroupMessage, JobMessage

    client = ApiClient(stack.base_url)
    connection = stack.azurite.connection_string
    # A request dropped on the upstream queue becomes a job; an invalid one is kept as a rejection.
    QueueClient.from_connection_string(connection, "jobs-requests").send_message(
        '{"workload": "artifacts", "projectId": "up", "inputs": [{"blob": "up/small.txt"}]}'
    )
    QueueClient.from_connection_string(connection, "jobs-requests").send_message('{"workload": "mining"}')
    deadline = time.monotonic() + 30
    while not (jobs := list(client.list("up"))):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert wait_all(client, [jobs[0]["id"]])[jobs[0]["id"]]["state"] == "succeeded"
    container = BlobServiceClient.from_connection_string(connection).get_container_client("haste-jobs")
    while not list(container.list_blobs(name_starts_with="rejected/")):
        assert time.monotonic() < deadline
        time.sleep(0.2)

    # A message the host gave up on fails its job with a readable reason. The job is stored
    # without a submit message (as if that message had failed every delivery), so only the
    # poison path can end it.
    from hastegeo.pipeline.accept import parse_request
    from hastegeo.settings.load import load_settings

    runtime = development_runtime(load_settings(stack.env))
    request = parse_request({"workload": "artifacts", "projectId": "p2", "inputs": [{"blob": "p2/small.txt"}]})
    runtime.queues.send = lambda *args, **kwargs: None  # type: ignore[method-assign]
    stranded = runtime.acceptor.accept(request).job
    runtime.journal.update(stranded.id, lambda j: j.model_copy(update={"last_error": "ServerBusy: try later"}))
    QueueClient.from_connection_string(connection, "jobs-submit-poison").send_message(
        JobMessage(job_id=stranded.id, kind="submit").encode()
    )
    final = wait_all(client, [stranded.id])[stranded.id]
    assert final["state"] == "failed"
    assert final["reason"] == "gave up after repeated failures of the submit step; last error: ServerBusy: try later"
    # A groups message the host gave up on fails no job: its trigger says what was lost, with the ids.
    QueueClient.from_connection_string(connection, "groups-make-poison").send_message(
        GroupMessage(group_id=stranded.id, kind="release").encode()
    )
    line = f"groups-make: gave up on releasing the jobs waiting for job {stranded.id} (from the first); "
    while line not in (stack.workdir / "host.log").read_text():
        assert time.monotonic() < deadline + 30
        time.sleep(0.2)


def test_the_dev_principal_is_injected_and_an_explicit_outsider_sees_a_404(stack: LocalStack) -> None:
    from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal

    # No header from the client: the host injects the stack's default admin, and says so once at start-up.
    client = ApiClient(stack.base_url)
    job = client.submit({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/small.txt"}]})
    log = (stack.workdir / "host.log").read_text()
    assert log.count("HASTE_DEV_PRINCIPAL is set") == 1
    assert "dev@localhost" in log

    # A header the client sends is kept (this stack trusts them): a submitter of p2 cannot see a p1 job,
    # nor tell it from a missing one.
    outsider = encode_principal(Principal("eve@example.com", "oid-eve", frozenset({Role.SUBMITTER}), frozenset({"p2"})))
    answers = {}
    for job_id in (job["id"], "no-such-job-0000"):
        with pytest.raises(ApiError) as caught:
            client.request("GET", f"/api/jobs/{job_id}", headers={PRINCIPAL_HEADER: outsider})
        answers[job_id] = (caught.value.status, {**caught.value.body, "detail": None})
    assert answers[job["id"]] == answers["no-such-job-0000"]
    assert answers[job["id"]][0] == 404
    with pytest.raises(ApiError) as caught:
        client.request("GET", "/api/jobs?projectId=p1", headers={PRINCIPAL_HEADER: "not a principal"})
    assert caught.value.status == 401
    assert "access denied (404)" in (stack.workdir / "host.log").read_text()
    assert outsider not in (stack.workdir / "host.log").read_text()
    assert wait_all(client, [job["id"]])[job["id"]]["state"] == "succeeded"  # the module's single slot is free again
