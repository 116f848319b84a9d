"""POST /api/jobs/{id}/retry with ``{"resumeFrom": "checkpoint"}``: the retry starts from the failed job's checkpoint,
within its project only (ADR 0044)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hastegeo.auth import Principal, Role, encode_principal
from hastegeo.checkpoints.layout import BLOB_VARIABLE, RESUME_VARIABLE
from hastegeo.models.states import JobState
from hastegeo.runtime import get_runtime
from hastegeo.utils.errors import InvalidJobError

from .test_api import call, jobs_stored
from .test_api_retry import retry

pytestmark = pytest.mark.azurite
OUTSIDER = encode_principal(Principal("bo@example.com", "oid-bo", frozenset({Role.SUBMITTER}), frozenset({"p2"})))


@pytest.fixture(autouse=True)
def api(api_settings: Callable[..., None]) -> None:
    api_settings()


def submitted(state: JobState, *, headers_principal: str | None = None, **fields: Any) -> str:
    headers = {"X-MS-CLIENT-PRINCIPAL": headers_principal} if headers_principal else {}
    body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": f"{fields.get('projectId', 'p1')}/a.txt"}]}
    status, job, _ = call("submit_job", "POST", "/api/jobs", {**body, **fields}, headers=headers)
    assert status == 202, job
    get_runtime().store.update(job["id"], lambda j: j.model_copy(update={"state": state}))
    return str(job["id"])


def spec_env(job_id: str) -> dict[str, str]:
    runtime = get_runtime()
    job = runtime.store.get(job_id)
    processor = runtime.deps.processors[job.workload]
    return processor.build_spec(job, runtime.deps.spec_inputs, runtime.deps.output_location(job.id)).env


def test_a_retry_that_asks_resumes_from_the_failed_jobs_checkpoint() -> None:
    old = submitted(JobState.FAILED)
    status, new = retry(old, body={"resumeFrom": "checkpoint"})
    assert status == 202
    assert new["resumeFrom"] == old
    assert new["history"][0]["message"].startswith(
        f"accepted from api as a retry of {old}, resuming from the checkpoint of {old}"
    )
    outputs = get_runtime().settings.storage.outputs_container
    env = spec_env(new["id"])
    assert env[RESUME_VARIABLE] == f"{outputs}/jobs/{old}/checkpoints"
    assert env[BLOB_VARIABLE] == f"{outputs}/jobs/{new['id']}/checkpoints"  # its own copies go under its own id


def test_a_plain_retry_starts_from_nothing() -> None:
    old = submitted(JobState.FAILED)
    status, new = retry(old)
    assert status == 202
    assert new["resumeFrom"] is None
    assert RESUME_VARIABLE not in spec_env(new["id"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"resumeFrom": "latest"}, "resumeFrom"),
        ({"resumeFrom": True}, "resumeFrom"),
        ({"resume": "checkpoint"}, "resume"),
        (["checkpoint"], ""),
        (b"{not json", ""),
    ],
)
def test_a_bad_option_is_a_400_naming_it_and_stores_nothing(body: Any, field: str) -> None:
    old = submitted(JobState.FAILED)
    before = jobs_stored()
    status, problem = retry(old, body=body)
    assert status == 400
    assert problem["errors"][0]["field"] == field
    assert jobs_stored() == before
    assert get_runtime().store.get(old).retries == []


def test_another_projects_job_cannot_be_resumed_through_the_api() -> None:
    old = submitted(JobState.FAILED)  # project p1
    before = jobs_stored()
    status, _ = retry(old, body={"resumeFrom": "checkpoint"}, headers={"X-MS-CLIENT-PRINCIPAL": OUTSIDER})
    assert status == 404
    assert jobs_stored() == before


def test_a_job_document_naming_another_projects_job_gets_no_checkpoint_of_it() -> None:
    """Whatever wrote the job document, the spec is built only for a job of the same project."""
    theirs = submitted(JobState.FAILED, projectId="p2", headers_principal=OUTSIDER)
    mine = submitted(JobState.QUEUED)
    get_runtime().store.update(mine, lambda j: j.model_copy(update={"resume_from": theirs}))
    with pytest.raises(InvalidJobError, match=f"job {theirs} is not a job of project p1") as raised:
        spec_env(mine)
    assert raised.value.field == "resumeFrom"


def test_resume_from_is_server_owned() -> None:
    status, body, _ = call(
        "submit_job", "POST", "/api/jobs", {"workload": "artifacts", "projectId": "p1", "resumeFrom": "x"}
    )
    assert status == 400
    assert "resumeFrom" in str(body)
