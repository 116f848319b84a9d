"""Hostile requests to the HTTP API: never a 5xx, every 4xx is problem+json, nothing stored or enqueued.

The handlers are called as the Functions host calls them (a real runtime on Azurite); a few cases also go
over real HTTP through the development host, where routing and body decoding happen for real.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import azure.functions as func
import pytest

import api.group_routes as group_routes
import api.http_routes as routes
from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal
from hastegeo.models.states import JobState
from hastegeo.runtime import get_runtime
from hastegeo.store.queues import GROUPS_QUEUE, SUBMIT_QUEUE
from hastegeo_dev.stack import LocalStack

pytestmark = pytest.mark.azurite

MAX_BODY = 200_000
VALID: dict[str, Any] = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}
Handler = Callable[[func.HttpRequest], func.HttpResponse]


def _handler(builder: object) -> Handler:
    # function_app.app.get_functions() refuses a second call per process; read each blueprint function directly.
    function: Handler = builder._function.get_user_function()  # type: ignore[attr-defined]
    return function


HANDLERS: dict[str, Handler] = {
    "submit_job": _handler(routes.submit_job),
    "get_job": _handler(routes.get_job),
    "cancel_job": _handler(routes.cancel_job),
    "retry_job": _handler(routes.retry_job),
    "list_jobs": _handler(routes.list_jobs),
    "submit_group": _handler(group_routes.submit_group),
    "get_group": _handler(group_routes.get_group),
    "cancel_group": _handler(group_routes.cancel_group),
    "retry_group": _handler(group_routes.retry_group),
}


@pytest.fixture
def api(api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_MAX_BODY_BYTES=str(MAX_BODY))


# An admin, as App Service authentication would pass it: these tests are about input, not access.
CALLER = encode_principal(Principal("hostile@example.com", "oid-hostile", frozenset({Role.ADMIN})))


def call(name: str, method: str, url: str, body: bytes = b"", **kwargs: Any) -> tuple[int, Any, func.HttpResponse]:
    """Call a handler (as an admin); an exception escaping it is what the host turns into a 500."""
    as_json = {"Content-Type": "application/json"} if body else {}
    kwargs["headers"] = {PRINCIPAL_HEADER: CALLER, **as_json, **kwargs.get("headers", {})}
    request = func.HttpRequest(method=method, url=url, body=body, **kwargs)
    try:
        response = HANDLERS[name](request)
    except Exception as exc:  # the platform answers 500 for an unhandled exception
        return 500, {"exception": f"{type(exc).__name__}: {exc}"[:300]}, func.HttpResponse(status_code=500)
    return response.status_code, json.loads(response.get_body() or b"null"), response


def assert_problem(status: int, body: Any, response: func.HttpResponse, expected: int) -> None:
    assert status == expected, body
    assert response.mimetype == "application/problem+json"
    assert isinstance(body, dict)
    assert body.get("status") == expected
    assert isinstance(body.get("title"), str)
    assert body["title"].strip()


def footprint() -> tuple[int, int, int]:
    """Blobs in the jobs container (jobs, groups, their entries) and messages on jobs-submit and groups-make."""
    runtime = get_runtime()
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    blobs = sum(1 for _ in container.list_blobs())
    depths = (
        int(runtime.queues.client(queue).get_queue_properties().approximate_message_count or 0)
        for queue in (SUBMIT_QUEUE, GROUPS_QUEUE)
    )
    return blobs, *depths


def submit(body: bytes) -> tuple[int, Any, func.HttpResponse]:
    return call("submit_job", "POST", "/api/jobs", body)


def with_inputs(*inputs: dict[str, str]) -> bytes:
    return json.dumps({**VALID, "inputs": list(inputs)}).encode()


BAD_BODIES: dict[str, bytes] = {
    "deeply-nested-array": b"[" * 100_000 + b"]" * 100_000,
    "deeply-nested-object": b'{"a":' * 30_000 + b"1" + b"}" * 30_000,
    "nested-in-parameters": json.dumps({**VALID, "parameters": {"x": "@"}})
    .encode()
    .replace(b'"@"', b"[" * 3000 + b"]" * 3000),
    "not-utf8-leading-bytes": b"\xff\xfe\xfa" + json.dumps(VALID).encode(),
    "not-utf8-inside-string": b'{"workload": "artifacts", "projectId": "p\xff1"}',
    "integer-too-long": b'{"workload": "artifacts", "projectId": "p1", "parameters": {"n": ' + b"9" * 5000 + b"}}",
    "float-overflow": json.dumps({**VALID, "parameters": {"compressLevel": 0}}).encode().replace(b": 0}", b": 1e400}"),
    "nan": json.dumps({**VALID, "parameters": {"compressLevel": 0}}).encode().replace(b": 0}", b": NaN}"),
    "json-array": json.dumps([VALID]).encode(),
    "json-null": b"null",
    "empty": b"",
    "nul-in-project": json.dumps({**VALID, "projectId": "p1\u0000"}).encode(),
    "server-owned": json.dumps({**VALID, "handle": {"backend": "local", "providerIds": {}}, "outputs": []}).encode(),
    # The last of each repeated name is valid: Python alone would read these bodies as good requests.
    "project-named-twice": json.dumps(VALID)
    .encode()
    .replace(b'"projectId": "p1"', b'"projectId": "p2", "projectId": "p1"'),
    "input-named-twice": json.dumps(VALID)
    .encode()
    .replace(b'"blob": "p1/a.txt"', b'"blob": "p2/a.txt", "blob": "p1/a.txt"'),
}

TRAVERSAL_BLOBS = [
    "../secret.txt",
    "p1/../../other/secret.txt",
    "p1/./a.txt",
    "/etc/passwd",
    "//evil.example/share",
    "p1//a.txt",
    "..\\..\\windows\\win.ini",
    "p1\\a.txt",
    "C:\\Windows\\win.ini",
    "file:///etc/passwd",
    "file:p1/a.txt",
    "ftp://evil.example/a.txt",
    "https://evil.example/a.txt",
    "http://169.254.169.254/metadata",
    "p1/a.txt?sv=x&sig=y",
    "p1/%2e%2e/%2e%2e/x",
    "..",
    ".",
    "",
    "p1/a.txt\n../x",
]


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_hostile_body_gets_a_400_problem_and_stores_nothing(case: str) -> None:
    before = footprint()
    status, body, response = submit(BAD_BODIES[case])
    assert_problem(status, body, response, 400)
    assert footprint() == before


@pytest.mark.usefixtures("api")
def test_a_body_one_byte_over_the_limit_is_a_413_and_one_at_the_limit_is_not() -> None:
    before = footprint()
    at_limit = json.dumps(VALID).encode().ljust(MAX_BODY, b" ")
    over = at_limit + b" "
    status, body, response = submit(over)
    assert_problem(status, body, response, 413)
    assert footprint() == before
    status, body, _ = submit(at_limit)
    assert status in (200, 202), body


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("blob", TRAVERSAL_BLOBS)
def test_input_names_that_escape_or_carry_a_scheme_are_refused(blob: str) -> None:
    before = footprint()
    for inputs in ({"blob": blob}, {"blob": "p1/a.txt", "dest": blob}):
        status, body, response = submit(with_inputs(inputs))
        assert_problem(status, body, response, 400)
        assert any(error["field"].startswith("inputs[0].") for error in body.get("errors", [])), body
    assert footprint() == before


@pytest.mark.usefixtures("api")
def test_a_job_id_input_from_another_project_is_a_400_indistinguishable_from_a_missing_job() -> None:
    status, other, _ = submit(json.dumps({**VALID, "projectId": "other", "inputs": [{"blob": "other/a.txt"}]}).encode())
    assert status == 202
    assert other["state"] == JobState.QUEUED.value
    before = footprint()

    status, foreign, response = submit(with_inputs({"jobId": other["id"]}))
    assert_problem(status, foreign, response, 400)
    status, missing, response = submit(with_inputs({"jobId": "no-such-job-0000"}))
    assert_problem(status, missing, response, 400)

    assert footprint() == before
    leaked = json.dumps(foreign)
    assert "other" not in leaked.replace(other["id"], "")
    assert JobState.QUEUED.value not in leaked
    assert foreign["title"] == missing["title"]
    assert foreign["detail"].replace(other["id"], "ID") == missing["detail"].replace("no-such-job-0000", "ID")


ODD_IDS = [
    "../jobs",
    "..%2F..%2Fjobs",
    "A",
    "a" * 64,
    "-a",
    "a b",
    "a/b",
    "a\\b",
    "ünï",
    "a\u0000b",
    "%00",
    "*",
    "",
    "a.json",
]


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("job_id", ODD_IDS)
def test_odd_job_ids_in_the_route_are_a_404_problem(job_id: str) -> None:
    before = footprint()
    for name, method, suffix in (
        ("get_job", "GET", ""),
        ("cancel_job", "POST", "/cancel"),
        ("retry_job", "POST", "/retry"),
    ):
        status, body, response = call(name, method, f"/api/jobs/x{suffix}", route_params={"id": job_id})
        assert_problem(status, body, response, 404)
    assert footprint() == before


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("project", ["../p1", "P1", "", "p1/x", "*", "p1%00", "a" * 64])
def test_odd_project_ids_when_listing_are_a_400_problem(project: str) -> None:
    status, body, response = call("list_jobs", "GET", "/api/jobs", params={"projectId": project})
    assert_problem(status, body, response, 400)


# Python's int() takes all of these but the last; the document's integer takes none of them.
ODD_PAGE_SIZES = ["1e9", "-1", "0", "201", "+5", " 5", "5 ", "1_0", "\uff15", "\u0663", "5.0", "0x10", "", "9" * 400]


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    "params",
    [*({"pageSize": size} for size in ODD_PAGE_SIZES), {"state": "x" * 10_000}, {"state": "running,"}],
)
def test_odd_list_parameters_are_a_400_problem_naming_the_parameter(params: dict[str, str]) -> None:
    status, body, response = call("list_jobs", "GET", "/api/jobs", params={"projectId": "p1", **params})
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]] == list(params)


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("size", ["1", "050", "200"])
def test_page_sizes_in_range_are_taken(size: str) -> None:
    status, body, _ = call("list_jobs", "GET", "/api/jobs", params={"projectId": "p1", "pageSize": size})
    assert status == 200, body


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("value", ["yes", "1", "on", "", "true,false", "truee", " true"])
def test_a_read_urls_value_other_than_true_or_false_is_a_400_naming_it(value: str) -> None:
    status, body, _ = submit(json.dumps(VALID).encode())
    assert status == 202, body
    status, body, response = call(
        "get_job", "GET", f"/api/jobs/{body['id']}", route_params={"id": body["id"]}, params={"readUrls": value}
    )
    assert_problem(status, body, response, 400)
    assert [error["field"] for error in body["errors"]] == ["readUrls"]


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(("value", "urls"), [("true", True), ("TRUE", True), ("false", False), ("False", False)])
def test_read_urls_takes_true_or_false_in_any_case(value: str, urls: bool) -> None:
    status, body, _ = submit(json.dumps(VALID).encode())
    assert status == 202, body
    status, body, _ = call(
        "get_job", "GET", f"/api/jobs/{body['id']}", route_params={"id": body["id"]}, params={"readUrls": value}
    )
    assert status == 200, body
    assert ("readUrlsExpireAt" in body) is urls


@pytest.mark.usefixtures("api")
def test_a_lone_surrogate_in_a_label_is_a_400_not_a_500() -> None:
    before = footprint()
    status, body, response = submit(json.dumps({**VALID, "labels": {"a": "\ud800"}}).encode())
    assert_problem(status, body, response, 400)
    assert footprint() == before


def _http(stack: LocalStack, method: str, path: str, body: bytes | None = None) -> tuple[int, str, Any]:
    request = urllib.request.Request(f"{stack.base_url}{path}", data=body, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return int(response.status), response.headers.get_content_type(), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = raw[:200]
        return exc.code, exc.headers.get_content_type(), payload


@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("projectId=p1&projectId=p2", 400),  # one project per listing: the repeat reaches the app as "p1,p2"
        ("projectId=p1&state=bogus&state=running", 400),  # every repeated state is checked, not only the last
        ("projectId=p1&state=running&state=queued", 200),
        ("projectId=p1&pageSize=", 200),  # an empty value is no value, as deployed
        ("projectId=p1&pageSize=5&pageSize=6", 400),
    ],
)
def test_repeated_and_empty_query_parameters_reach_the_app_as_they_do_deployed(
    stack: LocalStack, query: str, expected: int
) -> None:
    status, content_type, payload = _http(stack, "GET", f"/api/jobs?{query}")
    assert status == expected, payload
    if expected == 400:
        assert content_type == "application/problem+json"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "path", "body", "expected"),
    [
        ("POST", "/api/jobs", b"[" * 100_000, 400),
        ("POST", "/api/jobs", b"\xff\xfe\x00{", 400),
        ("POST", "/api/jobs", json.dumps({**VALID, "inputs": [{"blob": "../../x"}]}).encode(), 400),
        ("POST", "/api/jobs", json.dumps(VALID).encode().ljust(262_145, b" "), 413),
        ("GET", "/api/jobs/..%2F..%2Fhaste-jobs", None, 404),
        ("GET", "/api/jobs/%2e%2e", None, 404),
        ("GET", "/api/jobs/UPPER", None, 404),
        ("GET", "/api/jobs/a%00b", None, 404),
        ("POST", "/api/jobs/%C3%BCn%C3%AF/cancel", None, 404),
    ],
)
def test_hostile_requests_over_http_get_a_4xx_problem_from_the_development_host(
    stack: LocalStack, method: str, path: str, body: bytes | None, expected: int
) -> None:
    status, content_type, payload = _http(stack, method, path, body)
    assert status == expected, payload
    assert content_type == "application/problem+json"
    assert isinstance(payload, dict)
    assert payload.get("status") == expected
    assert payload.get("title")


GROUP: dict[str, Any] = {**VALID, "items": [{"labels": {"n": str(n)}} for n in range(20)]}


def group_with(**fields: Any) -> bytes:
    return json.dumps({**GROUP, **fields}).encode()


def item_with(index: int, **fields: Any) -> bytes:
    items = [dict(item) for item in GROUP["items"]]
    items[index].update(fields)
    return group_with(items=items)


# Each bad group body, and the field its 400 names first (None: the body as a whole).
BAD_GROUPS: dict[str, tuple[bytes, str | None]] = {
    "deeply-nested-array": (b"[" * 100_000 + b"]" * 100_000, None),
    "not-utf8-inside-string": (group_with().replace(b'"p1"', b'"p\xff1"', 1), None),
    "json-array": (json.dumps([GROUP]).encode(), None),
    "empty": (b"", None),
    "no-items": (group_with(items=[]), "items"),
    "items-not-a-list": (group_with(items={"0": {}}), "items"),
    "10001-items": (group_with(items=[{}] * 10_001), "items"),
    "one-invalid-item": (item_with(17, parameters={"compressLevel": 42}), "items[17].parameters.compressLevel"),
    "nan-in-an-item": (item_with(3, parameters={"compressLevel": 0}).replace(b": 0}", b": NaN}"), None),
    "server-owned-in-an-item": (item_with(2, state="succeeded"), "items[2].state"),
    "traversal-in-an-item": (item_with(5, inputs=[{"blob": "../secret.txt"}]), "items[5].inputs[0].blob"),
    "after-too-long": (group_with(after=[f"k{n:020d}" for n in range(51)]), "after"),
    "after-a-missing-job": (group_with(after=["knosuchjob0000000000001"]), "after[0]"),
    "after-a-missing-job-in-an-item": (item_with(4, after=["gnosuchgroup000000001"]), "items[4].after"),
    "nul-in-project": (group_with(projectId="p1\u0000"), "projectId"),
    "project-named-twice": (group_with().replace(b'"projectId": "p1"', b'"projectId": "p2", "projectId": "p1"'), None),
}


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("case", sorted(BAD_GROUPS))
def test_a_hostile_group_gets_a_400_problem_naming_the_field_and_stores_nothing(case: str) -> None:
    raw, field = BAD_GROUPS[case]
    before = footprint()
    status, body, response = call("submit_group", "POST", "/api/groups", raw)
    assert_problem(status, body, response, 400)
    if field is not None:
        assert str(body["errors"][0]["field"]).startswith(field), body
    assert footprint() == before


@pytest.mark.usefixtures("api")
def test_a_group_body_over_its_limit_is_a_413_and_stores_nothing() -> None:
    before = footprint()
    over = group_with().ljust(group_routes.MAX_GROUP_BODY_BYTES + 1, b" ")
    status, body, response = call("submit_group", "POST", "/api/groups", over)
    assert_problem(status, body, response, 413)
    assert footprint() == before
    status, body, _ = call("submit_group", "POST", "/api/groups", group_with())
    assert status == 202, body  # the control: the same group under the limit is taken


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize("group_id", ODD_IDS)
def test_odd_group_ids_are_a_404_problem_in_routes_and_listings(group_id: str) -> None:
    before = footprint()
    for name, method, suffix in (
        ("get_group", "GET", ""),
        ("cancel_group", "POST", "/cancel"),
        ("retry_group", "POST", "/retry"),
    ):
        status, body, response = call(name, method, f"/api/groups/x{suffix}", route_params={"id": group_id})
        assert_problem(status, body, response, 404)
    status, body, response = call("list_jobs", "GET", "/api/jobs", params={"groupId": group_id})
    assert_problem(status, body, response, 404)
    assert footprint() == before
