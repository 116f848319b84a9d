"""POST /api/jobs/{id}/retry: a new job with the same request, linked both ways, for failed and cancelled jobs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from api.openapi import openapi_document
from hastegeo.auth import Principal, Role, encode_principal
from hastegeo.models.states import JobState
from hastegeo.runtime import get_runtime

from .test_api import VALID, call

pytestmark = pytest.mark.azurite
DOCUMENTED = set(openapi_document()["paths"]["/jobs/{id}/retry"]["post"]["responses"])


@pytest.fixture(autouse=True)
def api(api_settings: Callable[..., None]) -> None:
    api_settings()


def retry(job_id: str, **kwargs: Any) -> tuple[int, Any]:
    status, body, response = call(
        "retry_job", "POST", f"/api/jobs/{job_id}/retry", route_params={"id": job_id}, **kwargs
    )
    assert str(status) in DOCUMENTED, (status, body)
    assert response.mimetype == ("application/json" if status < 300 else "application/problem+json")
    return status, body


def submitted(state: JobState, key: str | None = None, **fields: Any) -> str:
    headers = {"Idempotency-Key": key} if key else {}
    _, job, _ = call("submit_job", "POST", "/api/jobs", {**VALID, **fields}, headers=headers)
    get_runtime().store.update(job["id"], lambda j: j.model_copy(update={"state": state}))
    return str(job["id"])


def test_a_failed_job_is_retried_with_its_request_and_linked_both_ways() -> None:
    old = submitted(JobState.FAILED, labels={"run": "7"}, correlationId="upstream-42")
    status, new = retry(old)
    assert status == 202
    assert new["id"] != old
    assert new["retryOf"] == old
    assert new["state"] == "queued"
    request_fields = ("workload", "projectId", "inputs", "parameters", "labels", "requestedBackend", "correlationId")
    _, before, _ = call("get_job", "GET", f"/api/jobs/{old}", route_params={"id": old})
    assert {k: new[k] for k in request_fields} == {k: before[k] for k in request_fields}
    assert before["retries"] == [new["id"]]
    assert new["submittedBy"] == {"name": "ana@example.com", "objectId": "oid-ana"}
    assert f"as a retry of {old}" in new["history"][0]["message"]
    assert get_runtime().store.get(new["id"]).state_changes[0].state is JobState.QUEUED


def test_an_idempotency_key_returns_the_same_retry() -> None:
    old = submitted(JobState.CANCELLED, key="r1")
    status, first = retry(old, headers={"Idempotency-Key": "r1"})
    assert status == 202
    status, again = retry(old, headers={"Idempotency-Key": "r1"})
    assert (status, again["id"]) == (200, first["id"])
    status, other = retry(old, headers={"Idempotency-Key": "r2"})
    assert status == 202
    assert other["id"] != first["id"]
    assert get_runtime().store.get(old).retries == [first["id"], other["id"]]
    # The same key named the original submission: a retry's key is scoped to the job it retries.
    assert first["id"] != old


@pytest.mark.parametrize(
    "state", [JobState.QUEUED, JobState.RUNNING, JobState.POSTPROCESSING, JobState.SUCCEEDED, JobState.CANCEL_REQUESTED]
)
def test_only_failed_and_cancelled_jobs_can_be_retried(state: JobState) -> None:
    old = submitted(state)
    status, problem = retry(old)
    assert status == 409
    assert problem["title"] == "The job cannot be retried"
    assert f"is {state.value}; only failed or cancelled jobs can be retried" in problem["detail"]
    assert get_runtime().store.get(old).retries == []


def test_unknown_and_other_projects_jobs_answer_404_like_get() -> None:
    assert retry("nosuchjob")[0] == 404
    assert retry("Not_An_Id")[0] == 404
    old = submitted(JobState.FAILED)
    outsider = encode_principal(Principal("bo@example.com", "oid-bo", frozenset({Role.SUBMITTER}), frozenset({"p2"})))
    status, body = retry(old, headers={"X-MS-CLIENT-PRINCIPAL": outsider})
    get_status, get_body, _ = call(
        "get_job", "GET", f"/api/jobs/{old}", route_params={"id": old}, headers={"X-MS-CLIENT-PRINCIPAL": outsider}
    )
    assert (status, body) == (get_status, get_body) == (404, get_body)


def test_a_reader_may_see_the_job_but_not_retry_it() -> None:
    old = submitted(JobState.FAILED)
    reader = encode_principal(Principal("cy@example.com", "oid-cy", frozenset({Role.READER}), frozenset({"p1"})))
    status, body = retry(old, headers={"X-MS-CLIENT-PRINCIPAL": reader})
    assert status == 403
    assert "cannot submit" in body["detail"]


def test_the_request_is_checked_again() -> None:
    """An input job that no longer succeeded (here: its outputs gone with its failure) refuses the retry."""
    source = submitted(JobState.SUCCEEDED)
    old = submitted(JobState.FAILED, inputs=[{"jobId": source}])
    get_runtime().store.update(source, lambda j: j.model_copy(update={"state": JobState.FAILED}))
    status, body = retry(old)
    assert status == 400
    assert body["errors"][0]["field"] == "inputs[0].jobId"


def test_a_bad_traceparent_header_on_submit_is_noted_not_refused() -> None:
    status, job, _ = call("submit_job", "POST", "/api/jobs", VALID, headers={"traceparent": "00-bad"})
    assert status == 202
    assert job["history"][1]["message"] == (
        "the request's traceparent is not a W3C trace context; the job starts a trace of its own"
    )
    status, job, _ = call(
        "submit_job",
        "POST",
        "/api/jobs",
        {**VALID, "labels": {"k": "v"}},
        headers={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    )
    assert (status, len(job["history"])) == (202, 1)
