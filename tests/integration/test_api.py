"""The HTTP functions called as the Functions host calls them, with a real runtime on Azurite."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import azure.functions as func
import pytest

import function_app
from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal
from hastegeo.runtime import get_runtime

pytestmark = pytest.mark.azurite

# get_functions() validates names each time and refuses a second call: index once.
INDEXED = function_app.app.get_functions()
FUNCTIONS = {f.get_function_name(): f.get_user_function() for f in INDEXED}


@pytest.fixture
def api(api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_MAX_BODY_BYTES="2048")


# The caller App Service authentication would pass: a submitter of project p1 (tests/integration/auth covers others).
CALLER = encode_principal(Principal("ana@example.com", "oid-ana", frozenset({Role.SUBMITTER}), frozenset({"p1"})))


def call(name: str, method: str, url: str, body: Any = None, **kwargs: Any) -> tuple[int, Any, func.HttpResponse]:
    raw = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
    as_json = {"Content-Type": "application/json"} if raw else {}
    kwargs["headers"] = {PRINCIPAL_HEADER: CALLER, **as_json, **kwargs.get("headers", {})}
    request = func.HttpRequest(method=method, url=url, body=raw, **kwargs)
    response = FUNCTIONS[name](request)
    payload = json.loads(response.get_body() or b"null")
    return response.status_code, payload, response


VALID = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}


def jobs_stored() -> int:
    container = get_runtime().blobs.get_container_client(get_runtime().settings.storage.jobs_container)
    return sum(1 for _ in container.list_blobs(name_starts_with="jobs/"))


def submit_queue_depth() -> int:
    return int(get_runtime().queues.client("jobs-submit").get_queue_properties().approximate_message_count)


@pytest.mark.usefixtures("api")
def test_server_owned_fields_get_a_400_that_names_them() -> None:
    before = submit_queue_depth()
    status, body, response = call(
        "submit_job", "POST", "/api/jobs", {**VALID, "state": "succeeded", "handle": {}, "history": []}
    )
    assert status == 400
    assert response.mimetype == "application/problem+json"
    assert [e["field"] for e in body["errors"]] == ["handle", "history", "state"]
    assert jobs_stored() == 0
    assert submit_queue_depth() == before


@pytest.mark.usefixtures("api")
def test_validation_errors_carry_field_paths() -> None:
    status, body, _ = call("submit_job", "POST", "/api/jobs", {**VALID, "inputs": [{"blob": "../x"}]})
    assert status == 400
    assert body["errors"][0]["field"] == "inputs[0].blob"
    status, body, _ = call("submit_job", "POST", "/api/jobs", b"{nope")
    assert status == 400
    assert body["title"] == "The body is not valid JSON"
    assert jobs_stored() == 0


@pytest.mark.usefixtures("api")
def test_disabled_backend_is_a_409_with_the_reason() -> None:
    status, body, _ = call("submit_job", "POST", "/api/jobs", {**VALID, "backend": "azure_batch"})
    assert status == 409
    assert "not enabled" in body["detail"]
    assert jobs_stored() == 0


@pytest.mark.usefixtures("api")
def test_oversized_body_is_a_413() -> None:
    status, _, _ = call("submit_job", "POST", "/api/jobs", {**VALID, "parameters": {"x": "y" * 4000}})
    assert status == 413
    assert jobs_stored() == 0


@pytest.mark.usefixtures("api")
def test_submit_get_list_cancel() -> None:
    status, job, response = call("submit_job", "POST", "/api/jobs", VALID, headers={"Idempotency-Key": "k1"})
    assert status == 202
    assert response.headers["Location"] == f"/api/jobs/{job['id']}"
    assert job["state"] == "queued"
    assert "requestFingerprint" not in job
    status, again, _ = call("submit_job", "POST", "/api/jobs", VALID, headers={"Idempotency-Key": "k1"})
    assert (status, again["id"]) == (200, job["id"])

    status, fetched, _ = call("get_job", "GET", f"/api/jobs/{job['id']}", route_params={"id": job["id"]})
    assert (status, fetched["id"]) == (200, job["id"])
    status, _, _ = call("get_job", "GET", "/api/jobs/nope", route_params={"id": "nope"})
    assert status == 404

    status, page, _ = call("list_jobs", "GET", "/api/jobs", params={"projectId": "p1"})
    assert [item["id"] for item in page["items"]] == [job["id"]]
    status, page, _ = call("list_jobs", "GET", "/api/jobs", params={"projectId": "p1", "state": "running"})
    assert page["items"] == []
    status, problem, _ = call("list_jobs", "GET", "/api/jobs", params={"projectId": "p1", "state": "sleeping"})
    assert (status, problem["errors"][0]["field"]) == (400, "state")

    status, cancelled, _ = call("cancel_job", "POST", f"/api/jobs/{job['id']}/cancel", route_params={"id": job["id"]})
    assert (status, cancelled["state"]) == (202, "cancelled")


@pytest.mark.usefixtures("api")
def test_backends_health_and_openapi_match_the_routes() -> None:
    status, backends, _ = call("list_backends", "GET", "/api/backends")
    assert status == 200
    assert backends["backends"][0]["name"] == "local"
    assert "artifacts" in backends["backends"][0]["workloads"]
    assert call("health", "GET", "/api/health")[1]["status"] == "ok"
    _, document, _ = call("openapi", "GET", "/api/openapi.json")
    documented = {(f"/api{path}", method.upper()) for path, item in document["paths"].items() for method in item}
    served, catch_alls = set(), []
    for function in INDEXED:
        trigger = function.get_trigger().get_dict_repr()
        if trigger["type"] != "httpTrigger":
            continue
        if "methods" not in trigger:  # every method under a prefix: the console's one function (ADR 0025)
            catch_alls.append(f"/api/{trigger['route'].split('{*', 1)[0]}".rstrip("/"))
            continue
        for method in trigger["methods"]:
            served.add((f"/api/{trigger['route']}", getattr(method, "value", method)))
    under_catch_all = {(path, method) for path, method in documented if path.startswith(tuple(catch_alls))}
    assert documented - under_catch_all == served
    # Each catch-all serves documented paths, and only documented GETs.
    assert {prefix for prefix in catch_alls if not any(p.startswith(prefix) for p, _ in under_catch_all)} == set()
    assert {method for _, method in under_catch_all} == {"GET"}


@pytest.mark.usefixtures("api")
def test_read_urls_only_when_asked_short_lived_and_never_stored(tmp_path: Any) -> None:
    import time
    import urllib.request

    from hastegeo.store.queues import JobMessage

    runtime = get_runtime()
    runtime.blobs.get_container_client(runtime.settings.storage.inputs_container).upload_blob("p1/a.txt", b"alpha")
    _, job, _ = call("submit_job", "POST", "/api/jobs", VALID)
    runtime.submit.handle(JobMessage(job_id=job["id"], kind="submit"))
    deadline = time.monotonic() + 30
    while not runtime.store.get(job["id"]).state.terminal:
        assert time.monotonic() < deadline
        runtime.poll.handle(JobMessage(job_id=job["id"], kind="nudge"))
        time.sleep(0.05)

    _, plain, _ = call("get_job", "GET", f"/api/jobs/{job['id']}", route_params={"id": job["id"]})
    assert plain["state"] == "succeeded"
    assert all("url" not in output for output in plain["outputs"])
    _, signed, _ = call(
        "get_job", "GET", f"/api/jobs/{job['id']}", route_params={"id": job["id"]}, params={"readUrls": "true"}
    )
    zipped = next(o for o in signed["outputs"] if o["name"] == "outputs/artifacts.zip")
    assert "sp=r" in zipped["url"]
    assert "se=" in zipped["url"]
    with urllib.request.urlopen(zipped["url"], timeout=10) as response:
        assert response.read()[:2] == b"PK"
    stored = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    document = stored.download_blob(f"jobs/{job['id']}.json").readall().decode()
    assert "sig=" not in document


def test_submissions_over_the_rate_get_a_429_with_retry_after(api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_SUBMIT_RATE_PER_S="0.01", HASTE_SUBMIT_BURST="2")
    statuses = []
    for _ in range(4):
        status, _, response = call("submit_job", "POST", "/api/jobs", VALID)
        statuses.append(status)
    assert statuses == [202, 202, 429, 429]
    assert response.mimetype == "application/problem+json"
    assert int(response.headers["Retry-After"]) >= 1
    assert jobs_stored() == 2


AML_WITHOUT_ENVIRONMENT = {
    "HASTE_BACKENDS_ENABLED": "local,azure_ml",
    "AML_MODE": "Existing",
    "AML_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
    "AML_RESOURCE_GROUP": "rg-haste",
    "AML_WORKSPACE": "ws-haste",
}


def test_backends_say_what_each_takes_and_why_not(api_settings: Callable[..., None]) -> None:
    api_settings(**AML_WITHOUT_ENVIRONMENT)  # Azure ML on, but no image, registered environment or build context
    status, listing, _ = call("list_backends", "GET", "/api/backends")
    assert status == 200
    backends = {b["name"]: b for b in listing["backends"]}
    assert set(backends) == {"local", "azure_ml"}
    aml = backends["azure_ml"]
    assert aml["workloads"] == []
    assert aml["takesNothingBecause"].startswith("no environment to run in: AML_IMAGE is empty")
    assert set(aml["unavailable"]) == {"imagery", "training", "inference", "embedding", "artifacts"}
    assert backends["local"]["takesNothingBecause"] is None
    assert backends["local"]["unavailable"] == {}
    assert listing["disabled"] == [{"name": "azure_batch", "reason": "not in HASTE_BACKENDS_ENABLED"}]


def test_an_explicit_backend_that_cannot_run_the_job_is_a_400_naming_backend(api_settings: Callable[..., None]) -> None:
    api_settings(**AML_WITHOUT_ENVIRONMENT)
    before = submit_queue_depth()
    status, body, response = call("submit_job", "POST", "/api/jobs", {**VALID, "backend": "azure_ml"})
    assert status == 400
    assert response.mimetype == "application/problem+json"
    assert [e["field"] for e in body["errors"]] == ["backend"]
    assert "'azure_ml' cannot run 'artifacts' workloads: no environment to run in: AML_IMAGE is empty" in body["detail"]
    assert jobs_stored() == 0
    assert submit_queue_depth() == before
    # auto never picks it: every job goes to the backend that can run it.
    for key in ("a1", "a2", "a3", "a4", "a5", "a6"):
        status, job, _ = call("submit_job", "POST", "/api/jobs", VALID, headers={"Idempotency-Key": key})
        assert (status, job["backend"]) == (202, "local")


def test_the_local_backend_takes_nothing_inside_azure_functions_unless_allowed(
    api_settings: Callable[..., None],
) -> None:
    platform = {"WEBSITE_SITE_NAME": "func-haste", "FUNCTIONS_WORKER_RUNTIME": "python"}
    api_settings(**platform)
    _, listing, _ = call("list_backends", "GET", "/api/backends")
    (local,) = listing["backends"]
    assert local["workloads"] == []
    assert "HASTE_LOCAL_ALLOW_IN_AZURE=true" in local["takesNothingBecause"]
    status, body, _ = call("submit_job", "POST", "/api/jobs", VALID)  # auto: nowhere to go
    assert status == 409
    assert "No enabled backend can run 'artifacts' workloads (local: " in body["detail"]
    assert "HASTE_LOCAL_ALLOW_IN_AZURE=true" in body["detail"]
    status, body, _ = call("submit_job", "POST", "/api/jobs", {**VALID, "backend": "local"})
    assert status == 400
    assert body["errors"][0]["field"] == "backend"
    assert "HASTE_LOCAL_ALLOW_IN_AZURE=true" in body["errors"][0]["message"]
    assert jobs_stored() == 0

    api_settings(**platform, HASTE_LOCAL_ALLOW_IN_AZURE="true")  # the operator's explicit opt-in
    _, listing, _ = call("list_backends", "GET", "/api/backends")
    assert "artifacts" in listing["backends"][0]["workloads"]
    status, job, _ = call("submit_job", "POST", "/api/jobs", VALID)
    assert (status, job["backend"]) == (202, "local")


@pytest.mark.usefixtures("api")
def test_cancel_answers_what_the_document_says_in_every_state() -> None:
    """202 while cancellation can still happen (and again, unchanged, while it is under way); 409 once ended."""
    from api.openapi import openapi_document
    from hastegeo.models.states import JobState

    documented = set(openapi_document()["paths"]["/jobs/{id}/cancel"]["post"]["responses"])
    store = get_runtime().store

    def cancel(job_id: str) -> tuple[int, Any]:
        status, body, response = call("cancel_job", "POST", f"/api/jobs/{job_id}/cancel", route_params={"id": job_id})
        assert str(status) in documented
        assert response.mimetype == ("application/json" if status == 202 else "application/problem+json")
        return status, body

    def submitted(state: JobState) -> str:
        _, job, _ = call("submit_job", "POST", "/api/jobs", {**VALID, "labels": {"state": state.value}})
        store.update(job["id"], lambda j: j.model_copy(update={"state": state}))
        return str(job["id"])

    running = submitted(JobState.RUNNING)
    status, first = cancel(running)
    assert (status, first["state"]) == (202, "cancel_requested")
    status, again = cancel(running)
    assert (status, again) == (202, first)  # idempotent: no second event

    for state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.POSTPROCESSING):
        job_id = submitted(state)
        status, problem = cancel(job_id)
        assert status == 409, state
        assert state.value in problem["detail"]
        assert store.get(job_id).state is state


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    ("params", "title", "field", "says"),
    [
        ({}, "projectId is required", "projectId", "required"),
        ({"projectId": "P1"}, "Invalid projectId", "projectId", "lowercase letters"),
        ({"projectId": "p1/../p2"}, "Invalid projectId", "projectId", "lowercase letters"),
        ({"projectId": "p1", "state": "Running"}, "Unknown state", "state", "'Running'"),
        ({"projectId": "p1", "state": "running,"}, "Unknown state", "state", "''"),
        ({"projectId": "p1", "state": "running, queued"}, "Unknown state", "state", "' queued'"),
        ({"projectId": "p1", "state": "running,nope,gone"}, "Unknown state", "state", "'nope', 'gone'"),
    ],
)
def test_a_bad_listing_parameter_is_named_with_what_was_wrong(
    params: dict[str, str], title: str, field: str, says: str
) -> None:
    status, problem, _ = call("list_jobs", "GET", "/api/jobs", params=params)
    assert (status, problem["title"]) == (400, title)
    assert [error["field"] for error in problem["errors"]] == [field]
    assert says in problem["errors"][0]["message"]
