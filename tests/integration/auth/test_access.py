"""Access control through the HTTP functions, called as the Functions host calls them, on Azurite."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import azure.functions as func
import pytest

import api.http_routes as routes
from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal
from hastegeo.runtime import ensure_storage, get_runtime, reset_runtime
from hastegeo.settings.load import get_settings
from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite

GROUP_P2 = "0b0b0b0b-0000-4000-8000-000000000002"
Handler = Callable[[func.HttpRequest], func.HttpResponse]


def _handler(builder: object) -> Handler:
    # function_app.app.get_functions() refuses a second call per process; read each blueprint function directly.
    function: Handler = builder._function.get_user_function()  # type: ignore[attr-defined]
    return function


HANDLERS = {
    name: _handler(getattr(routes, name))
    for name in ("submit_job", "get_job", "cancel_job", "retry_job", "list_jobs", "list_backends")
}


def principal(name: str, roles: set[Role], projects: set[str] | None = None) -> str:
    return encode_principal(Principal(name, f"oid-{name.split('@')[0]}", frozenset(roles), frozenset(projects or ())))


ADMIN = principal("root@example.com", {Role.ADMIN})
SUBMITTER_P1 = principal("ana@example.com", {Role.SUBMITTER}, {"p1"})
SUBMITTER_P2 = principal("bo@example.com", {Role.SUBMITTER}, {"p2"})
READER_P1 = principal("cy@example.com", {Role.READER}, {"p1"})


def request(project: str) -> dict[str, Any]:
    return {"workload": "artifacts", "projectId": project, "inputs": [{"blob": f"{project}/a.txt"}]}


@pytest.fixture
def api(azurite: Azurite, clean_env: pytest.MonkeyPatch, unique: str, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    clean_env.setenv("AzureWebJobsStorage", azurite.connection_string)
    clean_env.setenv("HASTE_JOBS_CONTAINER", f"jobs-{unique}")
    clean_env.setenv("HASTE_INPUTS_CONTAINER", f"inputs-{unique}")
    clean_env.setenv("HASTE_OUTPUTS_CONTAINER", f"outputs-{unique}")
    clean_env.setenv("HASTE_LOCAL_ROOT", str(tmp_path))
    clean_env.setenv("HASTE_PROJECT_GROUPS", f"{GROUP_P2}=p2")
    get_settings.cache_clear()
    reset_runtime()
    ensure_storage(get_settings())
    yield clean_env
    for adapter in get_runtime().registry.built().values():
        adapter.close()
    reset_runtime()
    get_settings.cache_clear()


def call(
    name: str, caller: str | None, method: str = "GET", body: Any = None, **kwargs: Any
) -> tuple[int, Any, func.HttpResponse]:
    headers = {PRINCIPAL_HEADER: caller} if caller is not None else {}
    raw = b"" if body is None else json.dumps(body).encode()
    if raw:
        headers["Content-Type"] = "application/json"
    response = HANDLERS[name](func.HttpRequest(method=method, url="/api/x", body=raw, headers=headers, **kwargs))
    return response.status_code, json.loads(response.get_body() or b"null"), response


def submit(caller: str, project: str) -> dict[str, Any]:
    status, job, _ = call("submit_job", caller, "POST", request(project))
    assert status == 202, job
    return job  # type: ignore[no-any-return]


def get(caller: str, job_id: str) -> tuple[int, Any, func.HttpResponse]:
    return call("get_job", caller, route_params={"id": job_id})


def cancel(caller: str, job_id: str) -> tuple[int, Any, func.HttpResponse]:
    return call("cancel_job", caller, "POST", route_params={"id": job_id})


def listed(caller: str, project: str) -> tuple[int, Any]:
    status, body, _ = call("list_jobs", caller, params={"projectId": project})
    return status, body


def jobs_stored() -> int:
    container = get_runtime().blobs.get_container_client(get_runtime().settings.storage.jobs_container)
    return sum(1 for _ in container.list_blobs(name_starts_with="jobs/"))


@pytest.mark.usefixtures("api")
def test_a_reader_cannot_submit() -> None:
    status, body, response = call("submit_job", READER_P1, "POST", request("p1"))
    assert status == 403
    assert response.mimetype == "application/problem+json"
    assert "Haste.Reader" in body["detail"]
    assert jobs_stored() == 0


@pytest.mark.usefixtures("api")
def test_a_submitter_cannot_submit_to_another_project() -> None:
    status, body, _ = call("submit_job", SUBMITTER_P1, "POST", request("p2"))
    assert status == 403
    assert "p2" in body["detail"]
    assert jobs_stored() == 0


@pytest.mark.usefixtures("api")
def test_a_job_of_another_project_is_a_404_with_the_body_of_a_missing_job() -> None:
    theirs = submit(SUBMITTER_P2, "p2")
    missing_id = "no-such-job-0000"
    for action in (get, cancel):
        status, hidden, hidden_response = action(SUBMITTER_P1, theirs["id"])
        missing_status, missing, missing_response = action(SUBMITTER_P1, missing_id)
        assert (status, missing_status) == (404, 404)
        assert hidden == {**missing, "detail": missing["detail"].replace(missing_id, theirs["id"])}
        assert hidden_response.mimetype == missing_response.mimetype
        assert "p2" not in json.dumps(hidden)
    assert get(SUBMITTER_P2, theirs["id"])[1]["state"] == "queued"  # not cancelled by the outsider


@pytest.mark.usefixtures("api")
def test_lists_show_only_the_callers_projects_and_an_admin_sees_everything() -> None:
    mine = submit(SUBMITTER_P1, "p1")
    theirs = submit(SUBMITTER_P2, "p2")
    # List items are summaries: the job with its latest event in place of the history.
    summary = {k: v for k, v in mine.items() if k not in ("history", "historyFolded")}
    assert listed(SUBMITTER_P1, "p1") == (
        200,
        {"items": [{**summary, "lastEvent": mine["history"][-1]}], "continuationToken": None},
    )
    status, body = listed(SUBMITTER_P1, "p2")
    assert status == 403
    assert "not a member of project p2" in body["detail"]
    assert theirs["id"] not in json.dumps(body)
    assert [job["id"] for job in listed(ADMIN, "p1")[1]["items"]] == [mine["id"]]
    assert [job["id"] for job in listed(ADMIN, "p2")[1]["items"]] == [theirs["id"]]
    assert get(ADMIN, theirs["id"])[0] == 200
    assert cancel(ADMIN, theirs["id"])[1]["state"] == "cancelled"
    assert call("list_backends", READER_P1)[0] == 200


@pytest.mark.usefixtures("api")
def test_a_reader_reads_but_cannot_cancel() -> None:
    job = submit(SUBMITTER_P1, "p1")
    assert get(READER_P1, job["id"])[0] == 200
    status, body, _ = cancel(READER_P1, job["id"])
    assert status == 403
    assert "cannot submit or cancel" in body["detail"]
    assert get(READER_P1, job["id"])[1]["state"] == "queued"


@pytest.mark.usefixtures("api")
def test_group_claims_grant_the_mapped_project() -> None:
    import base64

    document = {
        "auth_typ": "aad",
        "claims": [
            {"typ": "name", "val": "dee@example.com"},
            {"typ": "roles", "val": "Haste.Submitter"},
            {"typ": "groups", "val": GROUP_P2},
        ],
    }
    caller = base64.b64encode(json.dumps(document).encode()).decode()
    job = submit(caller, "p2")
    assert get(caller, job["id"])[0] == 200
    assert call("submit_job", caller, "POST", request("p1"))[0] == 403


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("caller", [None, "", "not base64 !", "e30="])  # e30= is "{}"
def test_no_valid_principal_in_app_service_mode_is_a_401_everywhere(caller: str | None) -> None:
    for name, method, extra in (
        ("submit_job", "POST", {}),
        ("list_jobs", "GET", {"params": {"projectId": "p1"}}),
        ("get_job", "GET", {"route_params": {"id": "some-job"}}),
        ("cancel_job", "POST", {"route_params": {"id": "some-job"}}),
        ("retry_job", "POST", {"route_params": {"id": "some-job"}}),
        ("list_backends", "GET", {}),
    ):
        status, body, response = call(name, caller, method, request("p1") if name == "submit_job" else None, **extra)
        assert (status, body["status"]) == (401, 401), name
        assert response.mimetype == "application/problem+json"
        assert "Bearer" in response.headers["WWW-Authenticate"]
    assert jobs_stored() == 0


@pytest.mark.usefixtures("api")
def test_denials_are_logged_with_the_caller_and_never_the_header(caplog: pytest.LogCaptureFixture) -> None:
    theirs = submit(SUBMITTER_P2, "p2")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="api.access"):
        call("submit_job", READER_P1, "POST", request("p1"))
        get(SUBMITTER_P1, theirs["id"])
        listed(SUBMITTER_P1, "p2")
        call("list_jobs", "garbage!", params={"projectId": "p1"})
    lines = [record.getMessage() for record in caplog.records if record.name == "api.access"]
    assert len(lines) == 4, lines
    assert "cy@example.com (oid oid-cy)" in lines[0]
    assert "project p1" in lines[0]
    assert "(404)" in lines[1]
    assert "ana@example.com" in lines[1]
    assert f"job {theirs['id']}" in lines[1]
    assert "project p2" in lines[1]
    assert "jobs" in lines[2]
    assert "(401)" in lines[3]
    text = "\n".join(lines)
    for secret in (READER_P1, SUBMITTER_P1, "garbage!"):
        assert secret not in text
        assert secret[:16] not in text


@pytest.mark.usefixtures("api")
def test_auth_mode_none_treats_everyone_as_admin_and_says_so(
    api: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    api.setenv("HASTE_AUTH_MODE", "none")
    get_settings.cache_clear()
    reset_runtime()
    with caplog.at_level(logging.WARNING, logger="api.access"):
        job = submit(READER_P1, "p9")  # the header is ignored: there is no identity in this mode
        assert listed("", "p9")[1]["items"][0]["id"] == job["id"]
        assert call("list_backends", None)[0] == 200
    warnings = [r.getMessage() for r in caplog.records if "HASTE_AUTH_MODE=none" in r.getMessage()]
    assert len(warnings) == 1
    assert "Haste.Admin" in warnings[0]
