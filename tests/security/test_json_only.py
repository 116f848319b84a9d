"""Routes that change state take application/json bodies only: every other body is a 415 that changes nothing.

Driven over real HTTP through the development host, for every route the app registers with a method
that may change state (read from the app's route table, not listed here), so a route added later is
held to the same rule. A route the document does not list for that method answers 405 instead.
The cross-site case is what a page on another site can send without a CORS preflight.
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from azure.storage.blob import BlobServiceClient

from api.openapi import openapi_document
from hastegeo_dev.stack import LocalStack
from tests.security.conftest import STACK_INPUTS_CONTAINER, stack_container
from tests.support.route_table import Route, http_routes

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

PROJECT = "json-only"
REQUEST = {"workload": "artifacts", "projectId": PROJECT, "inputs": [{"blob": f"{PROJECT}/a.txt"}]}
BODY = json.dumps(REQUEST).encode()
# What browsers send across sites without a preflight, and other types that are not JSON either.
NOT_JSON = [
    "text/plain;charset=UTF-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=----x",
    "text/html",
    "application/xml",
    "application/merge-patch+json",
    "application/jsonx",
    "application/json, text/plain",
    None,  # a body without any Content-Type
]
ACCEPTED_JSON = ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"]


def send(
    stack: LocalStack, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], Any]:
    """One request exactly as given (http.client adds no Content-Type of its own)."""
    address = urlsplit(stack.base_url)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Content-Length": str(len(body)), **headers})
        response = connection.getresponse()
        raw = response.read()
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()
    return response.status, answer_headers, json.loads(raw) if raw else None


def job_documents(stack: LocalStack) -> set[str]:
    return {blob.name for blob in stack_container(stack).list_blobs(name_starts_with="jobs/")}


@pytest.fixture(scope="module")
def job_id(stack: LocalStack) -> str:
    inputs = BlobServiceClient.from_connection_string(stack.azurite.connection_string)
    inputs.get_container_client(STACK_INPUTS_CONTAINER).upload_blob(f"{PROJECT}/a.txt", b"a", overwrite=True)
    status, _, job = send(stack, "POST", "/api/jobs", BODY, {"Content-Type": "application/json"})
    assert status == 202, job
    return str(job["id"])


def concrete(route: Route, job_id: str) -> str:
    """The route's template with its parameters filled: a real job for ``{id}``, a plain word otherwise."""
    return "/api/" + re.sub(r"\{[^}]*\}", lambda m: job_id if m.group(0) == "{id}" else "x", route.route)


def documented(route: Route, method: str) -> bool:
    return method.lower() in openapi_document()["paths"].get(route.openapi_path, {})


STATE_CHANGING = [(route, method) for route in http_routes() for method in route.unsafe_methods()]


def test_the_route_table_has_routes_that_change_state() -> None:
    """The parametrisation below is only as good as the table it reads: it must find the known ones."""
    assert {(route.route, method) for route, method in STATE_CHANGING} >= {
        ("jobs", "POST"),
        ("jobs/{id}/cancel", "POST"),
    }


@pytest.mark.parametrize(("route", "method"), STATE_CHANGING, ids=[f"{m} {r.route}" for r, m in STATE_CHANGING])
def test_every_body_that_is_not_json_is_refused_and_changes_nothing(
    stack: LocalStack, job_id: str, route: Route, method: str
) -> None:
    path = concrete(route, job_id)
    before = job_documents(stack)
    for content_type in NOT_JSON:
        headers = {} if content_type is None else {"Content-Type": content_type}
        status, answer_headers, problem = send(stack, method, path, BODY, headers)
        if not documented(route, method):
            assert status == 405, (method, path, content_type, problem)
            continue
        assert status == 415, (method, path, content_type, problem)
        assert answer_headers["content-type"].startswith("application/problem+json")
        assert problem["status"] == 415
        assert problem["title"] == "Unsupported media type"
        assert [error["field"] for error in problem["errors"]] == ["Content-Type"]
        assert "application/json" in problem["detail"]
    assert job_documents(stack) == before


def test_json_with_parameters_in_any_case_is_accepted(stack: LocalStack) -> None:
    for number, content_type in enumerate(ACCEPTED_JSON):
        body = json.dumps({**REQUEST, "labels": {"n": str(number)}}).encode()
        status, _, job = send(stack, "POST", "/api/jobs", body, {"Content-Type": content_type})
        assert status == 202, (content_type, job)


def test_a_request_without_a_body_needs_no_content_type(stack: LocalStack, job_id: str) -> None:
    status, _, answer = send(stack, "POST", f"/api/jobs/{job_id}/cancel", b"", {})
    assert status in (202, 409), answer  # cancelled now, or it had already ended: either way it was read
    status, _, answer = send(stack, "POST", "/api/jobs", b"", {})
    assert status == 400, answer  # a submission needs its JSON body: a validation error, not a media type


def test_a_cross_site_text_plain_post_creates_no_job(stack: LocalStack) -> None:
    """What a form or ``fetch(..., {mode: "no-cors"})`` on another site sends: no preflight, the host's caller."""
    before = job_documents(stack)
    for content_type, body in [
        ("text/plain;charset=UTF-8", BODY),
        ("text/plain", b"{}=" + BODY),  # <form enctype="text/plain"> with one field named as the JSON
        ("application/x-www-form-urlencoded", b"a=" + BODY),
    ]:
        status, headers, problem = send(
            stack,
            "POST",
            "/api/jobs",
            body,
            {
                "Content-Type": content_type,
                "Origin": "https://elsewhere.example",
                "Referer": "https://elsewhere.example/",
            },
        )
        assert status == 415, problem
        assert "access-control-allow-origin" not in headers
    assert job_documents(stack) == before
