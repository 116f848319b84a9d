"""A caller of one project never gets a byte of another's, whatever input field they use (docs/adr/0008).

Through the development stack's HTTP API with a submitter of ``p1-iso``: every input-bearing field of
every workload (JobInput's source fields, and each parameter the models mark as naming an input file)
is tried with ``p2-iso``'s data and refused naming the field path; a job of the other project is
answered exactly like a missing job. Then what acceptance cannot see: job documents as an older
version could have written them are refused where the inputs are staged, the upstream queue holds
requests to the same rule, and nothing the ``p1-iso`` caller can read — the job JSON, the outputs
behind ``?readUrls=true``, the staged files on the local backend — holds the other project's secret.
Follow-ons that would inherit foreign inputs are covered in tests/integration/test_ownership_pipeline.py.
"""

from __future__ import annotations

import io
import json
import time
import urllib.request
import uuid
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal
from hastegeo.cli.client import ApiClient, ApiError
from hastegeo.models.job import Job, JobInput
from hastegeo.models.ownership import SOURCE_FIELDS, parameter_refs
from hastegeo.models.states import JobState
from hastegeo.store.jobs import JobStore
from hastegeo.store.queues import REQUESTS_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo.workloads.processor import processors
from hastegeo_dev.stack import LocalStack
from tests.security.conftest import STACK_INPUTS_CONTAINER, stack_container, stack_queue, wait_until

PROCESSORS = processors()

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

MINE, THEIRS = "p1-iso", "p2-iso"
SECRET = f"P2-ISO-SECRET-{uuid.uuid4().hex}".encode()
SECRET_BLOB = f"{THEIRS}/secret/buildings.geojson"
OWN_BLOB = f"{MINE}/own/decoy.txt"
ANA = Principal("ana@example.com", "oid-ana", frozenset({Role.SUBMITTER}), frozenset({MINE}))
BO = Principal("bo@example.com", "oid-bo", frozenset({Role.SUBMITTER}), frozenset({THEIRS}))


@dataclass(frozen=True)
class World:
    stack: LocalStack
    their_job: str  # a succeeded job of the other project whose outputs hold the secret


def api(stack: LocalStack, who: Principal, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    try:
        status, payload, _ = ApiClient(stack.base_url).request(
            method, path, body, {PRINCIPAL_HEADER: encode_principal(who)}
        )
    except ApiError as exc:
        return exc.status, exc.body
    return status, payload


def wait_final(stack: LocalStack, who: Principal, job_id: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status, job = api(stack, who, "GET", f"/api/jobs/{job_id}")
        assert status == 200, job
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def world(stack: LocalStack) -> World:
    inputs = stack_container(stack, STACK_INPUTS_CONTAINER)
    inputs.upload_blob(SECRET_BLOB, SECRET, overwrite=True)
    inputs.upload_blob(OWN_BLOB, b"p1 decoy", overwrite=True)
    body = {"workload": "artifacts", "projectId": THEIRS, "inputs": [{"blob": SECRET_BLOB}]}
    status, theirs = api(stack, BO, "POST", "/api/jobs", body)
    assert status == 202, theirs
    assert wait_final(stack, BO, theirs["id"])["state"] == "succeeded"
    return World(stack, theirs["id"])


def my_jobs(stack: LocalStack) -> list[dict[str, Any]]:
    status, page = api(stack, ANA, "GET", f"/api/jobs?projectId={MINE}&pageSize=200")
    assert status == 200, page
    return list(page["items"])


def assert_no_secret(value: Any) -> None:
    text = value if isinstance(value, bytes) else json.dumps(value).encode()
    assert SECRET not in text


# --------------------------------------------------------------------------- every field, at acceptance


def _base(workload: str) -> dict[str, Any]:
    """A request of ``workload`` that is valid but for the field under test."""
    parameters = {"classes": ["a", "b"]} if workload == "training" else {}
    return {"workload": workload, "projectId": MINE, "inputs": [{"blob": OWN_BLOB}], "parameters": parameters}


def _attacks(their_job: str) -> list[tuple[str, dict[str, Any], str]]:
    """``(case, request, field path that must be named)`` for every input-bearing field of every workload.

    Derived from the models: JobInput's source fields and each workload's parameters marked as input names.
    """
    attack_input = {"blob": {"blob": SECRET_BLOB}, "job_id": {"jobId": their_job}}
    assert set(attack_input) == SOURCE_FIELDS
    cases = []
    for workload, processor in PROCESSORS.items():
        for field, item in attack_input.items():
            alias = "jobId" if field == "job_id" else field
            cases.append((f"{workload}.inputs[].{alias}", {**_base(workload), "inputs": [item]}, f"inputs[0].{alias}"))
        for ref in parameter_refs(processor.params_model):
            base = _base(workload)
            value = [SECRET_BLOB] if ref.many else SECRET_BLOB
            path = f"parameters.{ref.alias}" + ("[0]" if ref.many else "")
            cases.append((f"{workload}.{path}", {**base, "parameters": {**base["parameters"], ref.alias: value}}, path))
    return cases


def test_every_input_field_of_every_workload_refuses_the_other_projects_data(world: World) -> None:
    stack = world.stack
    before = len(my_jobs(stack))
    cases = _attacks(world.their_job)
    assert {case.split(".")[0] for case, _, _ in cases} == set(PROCESSORS)
    assert len(cases) >= 2 * len(PROCESSORS) + 8  # both source fields everywhere, and the parameters
    for case, body, path in cases:
        status, problem = api(stack, ANA, "POST", "/api/jobs", body)
        assert status == 400, (case, problem)
        assert [e["field"] for e in problem["errors"]] == [path], (case, problem)
        assert_no_secret(problem)
    assert len(my_jobs(stack)) == before  # nothing was kept


def test_a_job_of_the_other_project_is_answered_like_a_missing_job(world: World) -> None:
    answers = []
    for job_id in (world.their_job, "nosuchjob0000000000"):
        body = {"workload": "artifacts", "projectId": MINE, "inputs": [{"jobId": job_id}]}
        status, problem = api(world.stack, ANA, "POST", "/api/jobs", body)
        answers.append((status, json.dumps(problem).replace(job_id, "<id>")))
    assert answers[0] == answers[1]
    assert answers[0][0] == 400
    # The other project's job itself is a 404 to this caller, like a missing one.
    assert api(world.stack, ANA, "GET", f"/api/jobs/{world.their_job}?readUrls=true")[0] == 404


def test_the_projects_own_inputs_run_and_readurls_serve_only_its_bytes(world: World) -> None:
    # Named like the other project's blob, but staged from this project's: names resolve only inside it.
    body = {"workload": "artifacts", "projectId": MINE, "inputs": [{"blob": OWN_BLOB, "dest": SECRET_BLOB}]}
    status, job = api(world.stack, ANA, "POST", "/api/jobs", body)
    assert status == 202, job
    assert job["submittedBy"] == {"name": "ana@example.com", "objectId": "oid-ana"}
    assert job["history"][0]["message"].startswith("accepted from api, submitted by ana@example.com (oid oid-ana)")
    assert wait_final(world.stack, ANA, job["id"])["state"] == "succeeded"
    status, view = api(world.stack, ANA, "GET", f"/api/jobs/{job['id']}?readUrls=true")
    assert status == 200
    assert_no_secret(view)
    archive = next(o for o in view["outputs"] if o["name"] == "outputs/artifacts.zip")
    with urllib.request.urlopen(archive["url"], timeout=30) as response:  # Azurite on loopback
        data = response.read()
    with zipfile.ZipFile(io.BytesIO(data)) as unzipped:
        contents = b"".join(unzipped.read(name) for name in unzipped.namelist())
    assert b"p1 decoy" in contents
    assert_no_secret(contents)


# --------------------------------------------------------------------------- past acceptance


def _forge(stack: LocalStack, inputs: list[JobInput]) -> str:
    """A queued job of this project stored directly, as an older version without the checks could have."""
    store = JobStore(stack_container(stack))
    now = datetime.now(UTC)
    job_id = f"forged{uuid.uuid4().hex[:12]}"
    store.create(
        Job(
            id=job_id,
            project_id=MINE,
            workload="artifacts",
            state=JobState.QUEUED,
            requested_backend="local",
            backend="local",
            inputs=inputs,
            created_at=now,
            updated_at=now,
            deadline_at=now + timedelta(minutes=10),
        )
    )
    stack_queue(stack, SUBMIT_QUEUE).send_message(JobMessage(job_id=job_id, kind="submit").encode())
    return job_id


@pytest.mark.parametrize("field", sorted(SOURCE_FIELDS))
def test_a_stored_job_with_a_foreign_input_is_refused_where_inputs_are_staged(world: World, field: str) -> None:
    item = JobInput(blob=SECRET_BLOB) if field == "blob" else JobInput(job_id=world.their_job)
    job_id = _forge(world.stack, [JobInput(blob=OWN_BLOB), item])
    final = wait_final(world.stack, ANA, job_id)
    assert final["state"] == "failed"
    assert f"inputs[1].{'jobId' if field == 'job_id' else field}" in (final["reason"] or "")
    status, view = api(world.stack, ANA, "GET", f"/api/jobs/{job_id}?readUrls=true")
    assert status == 200
    assert view["outputs"] == []
    assert_no_secret(view)
    # Not staged either: no file on the local backend holds the secret.
    for path in (world.stack.workdir / "local").rglob("*"):
        if path.is_file() and path.stat().st_size < 1 << 20:
            assert SECRET not in path.read_bytes(), path


def test_the_upstream_queue_holds_requests_to_the_project(world: World) -> None:
    jobs = stack_container(world.stack)
    seen = {blob.name for blob in jobs.list_blobs(name_starts_with="rejected/")}
    body = {"workload": "artifacts", "projectId": MINE, "inputs": [{"blob": SECRET_BLOB}]}
    before = len(my_jobs(world.stack))
    stack_queue(world.stack, REQUESTS_QUEUE).send_message(json.dumps(body))

    def rejected() -> list[dict[str, Any]]:
        names = [b.name for b in jobs.list_blobs(name_starts_with="rejected/") if b.name not in seen]
        records = [json.loads(jobs.download_blob(name).readall()) for name in names]
        return [r for r in records if SECRET_BLOB in r["body"]]

    wait_until(lambda: bool(rejected()), 60, "the upstream rejection")
    assert "inputs[0].blob" in rejected()[0]["reason"]
    assert len(my_jobs(world.stack)) == before
