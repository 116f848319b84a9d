"""Each class of hostile input, sent to every route of its class: a 4xx problem naming the field, nothing stored.

A class is fixed in the one place its routes share (``api.bodies``, ``api.query``, ``api.access.not_found``,
``hastegeo.pipeline.accept.decode_body``), so these tests go over every route of a class rather than one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import azure.functions as func
import pytest

import api.group_routes as group_routes
import api.http_routes as routes
from tests.security.test_api_hostile import CALLER, MAX_BODY, VALID, _handler, assert_problem, footprint

pytestmark = pytest.mark.azurite

HANDLERS = {
    "submit_job": _handler(routes.submit_job),
    "retry_job": _handler(routes.retry_job),
    "cancel_job": _handler(routes.cancel_job),
    "get_job": _handler(routes.get_job),
    "job_logs": _handler(routes.job_logs),
    "list_jobs": _handler(routes.list_jobs),
    "set_budget": _handler(routes.set_project_budget),
    "project_costs": _handler(routes.project_costs),
    "submit_group": _handler(group_routes.submit_group),
    "get_group": _handler(group_routes.get_group),
    "cancel_group": _handler(group_routes.cancel_group),
    "retry_group": _handler(group_routes.retry_group),
}
# Ids of the right form that name nothing: each route checks its body before it reads storage.
NO_JOB = "knosuchjob0000000000001"
NO_GROUP = "gnosuchgroup0000000001"
# (handler, method, route parameters) of every route that reads a JSON body, and of every one that takes none.
BODY_ROUTES = {
    "submit_job": ("POST", {}),
    "retry_job": ("POST", {"id": NO_JOB}),
    "set_budget": ("PUT", {"id": "p1"}),
    "submit_group": ("POST", {}),
}
BODILESS_ROUTES = {
    "cancel_job": ("POST", {"id": NO_JOB}),
    "cancel_group": ("POST", {"id": NO_GROUP}),
    "retry_group": ("POST", {"id": NO_GROUP}),
}


@pytest.fixture
def api(api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_MAX_BODY_BYTES=str(MAX_BODY), HASTE_BUDGET_ACTION="refuse")


def call(
    name: str, method: str, body: bytes = b"", route_params: dict[str, str] | None = None, **params: str
) -> tuple[int, Any, func.HttpResponse]:
    """Call a handler as an admin, with a JSON body; an exception escaping it is the host's 500."""
    headers = {"X-MS-CLIENT-PRINCIPAL": CALLER, **({"Content-Type": "application/json"} if body else {})}
    request = func.HttpRequest(
        method=method, url="/api/x", body=body, headers=headers, route_params=route_params or {}, params=params
    )
    try:
        response = HANDLERS[name](request)
    except Exception as exc:  # the platform answers 500 for an unhandled exception
        return 500, {"exception": f"{type(exc).__name__}: {exc}"[:300]}, func.HttpResponse(status_code=500)
    return response.status_code, json.loads(response.get_body() or b"null"), response


# Each hostile body and the field its 400 names (every route that reads a body decodes it in one place).
HOSTILE_BODIES: dict[str, tuple[bytes, str]] = {
    "deeply-nested": (b"[" * 100_000 + b"]" * 100_000, ""),
    "utf-16": ('{"monthlyBudget": "5"}'.encode("utf-16"), ""),
    "utf-32": ('{"monthlyBudget": "5"}'.encode("utf-32"), ""),
    "encoded-surrogate": (b'{"a": "\xed\xa0\x80"}', ""),
    "member-named-twice": (b'{"resumeFrom": "x", "resumeFrom": null}', "resumeFrom"),
    "lone-surrogate": (b'{"labels": {"a": "\\ud800"}}', "labels.a"),
    "lone-surrogate-in-a-name": (b'{"\\udc00x": 1}', "\\udc00x"),
    "integer-of-5000-digits": (b'{"n": ' + b"9" * 5000 + b"}", ""),
    "infinity": (b'{"n": Infinity}', ""),
}


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("route", sorted({**BODY_ROUTES, **BODILESS_ROUTES}))
@pytest.mark.parametrize("case", sorted(HOSTILE_BODIES))
def test_a_hostile_body_is_a_400_naming_its_path_on_every_route(route: str, case: str) -> None:
    method, route_params = {**BODY_ROUTES, **BODILESS_ROUTES}[route]
    raw, field = HOSTILE_BODIES[case]
    before = footprint()
    status, body, response = call(route, method, raw, route_params)
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]][:1] == [field], body
    assert "Traceback" not in json.dumps(body)
    assert "sys.set_int_max_str_digits" not in json.dumps(body)
    assert footprint() == before


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("route", sorted(set(BODY_ROUTES) - {"submit_group"} | set(BODILESS_ROUTES)))
def test_a_body_over_the_limit_is_a_413_on_every_route(route: str) -> None:
    method, route_params = {**BODY_ROUTES, **BODILESS_ROUTES}[route]
    before = footprint()
    status, body, response = call(route, method, b"{}".ljust(MAX_BODY + 1, b" "), route_params)
    assert_problem(status, body, response, 413)
    assert footprint() == before


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("route", sorted(BODILESS_ROUTES))
@pytest.mark.parametrize(
    ("raw", "field"), [(b"garbage", ""), (b"[]", ""), (b'{"resumeFrom": "checkpoint"}', "resumeFrom")]
)
def test_a_route_that_takes_no_body_refuses_one_rather_than_ignore_it(route: str, raw: bytes, field: str) -> None:
    method, route_params = BODILESS_ROUTES[route]
    before = footprint()
    status, body, response = call(route, method, raw, route_params)
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]] == [field]
    assert footprint() == before


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("raw", [b"", b"{}"])
def test_a_route_that_takes_no_body_takes_an_empty_one_or_an_empty_object(raw: bytes) -> None:
    status, job, _ = call("submit_job", "POST", json.dumps(VALID).encode())
    assert status == 202, job
    status, body, _ = call("cancel_job", "POST", raw, {"id": job["id"]})
    assert status == 202, body


def _group() -> str:
    status, group, _ = call("submit_group", "POST", json.dumps({**VALID, "items": [{}, {}, {}]}).encode())
    assert status == 202, group
    return str(group["id"])


TOO_LONG = "9" * 5000  # int() refuses more than 4,300 digits with an exception: a 500 where it escaped


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    ("route", "param"),
    [
        ("list_jobs", "pageSize"),
        ("list_group_jobs", "pageSize"),
        ("list_group_jobs", "continuationToken"),
        ("job_logs", "offset"),
    ],
)
@pytest.mark.parametrize("value", [TOO_LONG, "0" * 5000 + "1" * 20, "-1", "+1", "1_0", "\u0663", " 1", "1e2"])
def test_every_integer_parameter_refuses_what_is_not_a_small_whole_number(route: str, param: str, value: str) -> None:
    before = footprint()
    if route == "list_group_jobs":
        status, body, response = call("list_jobs", "GET", groupId=_group(), **{param: value})
    elif route == "job_logs":
        status, body, response = call("job_logs", "GET", route_params={"id": NO_JOB}, **{param: value})
    else:
        status, body, response = call(route, "GET", projectId="p1", **{param: value})
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]] == [param]
    if route == "list_jobs":
        assert footprint() == before


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    "params",
    [{"state": "bogus"}, {"state": "running,"}, {"include": "everything"}, {"pageSize": "0"}, {"projectId": "../p1"}],
)
def test_a_group_listing_checks_the_parameters_a_project_listing_checks(params: dict[str, str]) -> None:
    status, body, response = call("list_jobs", "GET", groupId=_group(), **params)
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]] == list(params)


@pytest.mark.usefixtures("api")
def test_a_group_listing_includes_the_history_when_asked_like_a_project_listing() -> None:
    group = _group()
    status, plain, _ = call("list_jobs", "GET", groupId=group)
    assert status == 200, plain
    status, full, _ = call("list_jobs", "GET", groupId=group, include="history", state="running")
    assert status == 200, full
    assert [item["id"] for item in full["items"]] == [item["id"] for item in plain["items"]]
    assert all("history" in item for item in full["items"])
    assert not any("history" in item for item in plain["items"])


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    "value", ["2026-W01-1", "2026-001", "\uff12026-01-01", "2026-02-30", "2026-13-01", "2026-1-01"]
)
@pytest.mark.parametrize("param", ["from", "to"])
def test_a_cost_date_in_any_form_but_yyyy_mm_dd_is_a_400_naming_it(param: str, value: str) -> None:
    status, body, response = call("project_costs", "GET", route_params={"id": "p1"}, **{param: value})
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]] == [param]


# Ids that can never name a job or a group, and the routes that look one up: each answers as for a missing one.
LOOKUPS = {
    "get_job": ("GET", "job"),
    "job_logs": ("GET", "job"),
    "cancel_job": ("POST", "job"),
    "retry_job": ("POST", "job"),
    "get_group": ("GET", "group"),
    "cancel_group": ("POST", "group"),
    "retry_group": ("POST", "group"),
}


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("route", sorted(LOOKUPS))
@pytest.mark.parametrize("odd", ["../x", "a" * 65_536, "a\u0000b", "\u202eabc", "\U0001f600"])
def test_an_id_that_cannot_be_one_is_answered_exactly_like_a_missing_one(route: str, odd: str) -> None:
    method, kind = LOOKUPS[route]
    missing = NO_JOB if kind == "job" else NO_GROUP
    status, expected, _ = call(route, method, route_params={"id": missing})
    assert status == 404, expected
    status, body, response = call(route, method, route_params={"id": odd})
    assert_problem(status, body, response, 404)
    assert set(body) == set(expected)
    assert body["title"] == expected["title"]
    assert len(body["detail"]) <= len(expected["detail"]) + 100


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("route", sorted(BODILESS_ROUTES))
def test_a_route_that_takes_no_body_refuses_a_json_null(route: str) -> None:
    """The document says: none, or an empty object."""
    method, route_params = BODILESS_ROUTES[route]
    status, body, response = call(route, method, b"null", route_params)
    assert_problem(status, body, response, 400)


# A validator that checks the members of a field names the member in the path, on jobs and groups alike.
MEMBER_PATHS: dict[str, tuple[str, dict[str, Any], str]] = {
    "job-after": ("submit_job", {**VALID, "after": ["knosuchjob0000000000001", "../x"]}, "after[1]"),
    "job-label-key": ("submit_job", {**VALID, "labels": {"ok": "v", "bad key": "v"}}, "labels.bad key"),
    "job-label-value": ("submit_job", {**VALID, "labels": {"long": "v" * 257}}, "labels.long"),
    "group-after": ("submit_group", {**VALID, "items": [{}], "after": ["../x"]}, "after[0]"),
    "group-label-key": ("submit_group", {**VALID, "items": [{}], "labels": {"\u0000": "v"}}, "labels.\u0000"),
    "item-after": ("submit_group", {**VALID, "items": [{}, {"after": ["ok-id", "a b"]}]}, "items[1].after[1]"),
    "item-label": ("submit_group", {**VALID, "items": [{"labels": {"x/y": "v"}}]}, "items[0].labels.x/y"),
}


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("case", sorted(MEMBER_PATHS))
def test_a_bad_member_of_a_field_is_named_by_its_own_path(case: str) -> None:
    route, request, field = MEMBER_PATHS[case]
    before = footprint()
    status, body, response = call(route, "POST", json.dumps(request).encode())
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]] == [field], body
    assert footprint() == before


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("route", ["submit_job", "retry_job", "submit_group"])
@pytest.mark.parametrize("key", ["", "k" * 201])
def test_an_idempotency_key_out_of_bounds_is_a_400_naming_the_header_on_every_route(route: str, key: str) -> None:
    body = {**VALID, "items": [{}]} if route == "submit_group" else VALID if route == "submit_job" else {}
    request = func.HttpRequest(
        method="POST",
        url="/api/x",
        body=json.dumps(body).encode(),
        headers={"X-MS-CLIENT-PRINCIPAL": CALLER, "Content-Type": "application/json", "Idempotency-Key": key},
        route_params={"id": NO_JOB} if route == "retry_job" else {},
    )
    before = footprint()
    response = HANDLERS[route](request)
    problem = json.loads(response.get_body())
    assert_problem(response.status_code, problem, response, 400)
    assert [error["field"] for error in problem["errors"]] == ["Idempotency-Key"]
    assert footprint() == before
