"""GET /api/jobs/{id}/logs keeps the job's own access rules and names a bad parameter (docs/adr/0045)."""

from __future__ import annotations

import json
from typing import Any

import azure.functions as func
import pytest

import api.http_routes as routes

from .test_access import READER_P1, SUBMITTER_P1, SUBMITTER_P2, _handler, api, jobs_stored, principal, submit

__all__ = ["api"]  # the fixture, shared with the other access tests

pytestmark = pytest.mark.azurite
LOGS = _handler(routes.job_logs)


def logs(caller: str, job_id: str, **params: str) -> tuple[int, Any]:
    headers = {"X-MS-CLIENT-PRINCIPAL": caller}
    request = func.HttpRequest(
        method="GET", url="/api/x", body=b"", headers=headers, route_params={"id": job_id}, params=params
    )
    response = LOGS(request)
    return response.status_code, json.loads(response.get_body() or b"null")


@pytest.mark.usefixtures("api")
def test_another_projects_job_is_a_404_exactly_like_a_missing_one() -> None:
    theirs = submit(SUBMITTER_P2, "p2")["id"]
    missing_id = "no-such-job-0000"
    status, hidden = logs(SUBMITTER_P1, theirs)
    missing_status, missing = logs(SUBMITTER_P1, missing_id)
    assert (status, missing_status) == (404, 404)
    assert hidden == {**missing, "detail": missing["detail"].replace(missing_id, theirs)}
    assert "p2" not in json.dumps(hidden)
    assert logs(SUBMITTER_P2, theirs)[0] == 200


@pytest.mark.usefixtures("api")
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"stream": "stdin"}, "stream"),
        ({"stream": ""}, "stream"),
        ({"offset": "-1"}, "offset"),
        ({"offset": "1e3"}, "offset"),
        ({"offset": "+5"}, "offset"),
        ({"offset": "٣"}, "offset"),  # a digit of another script
        ({"offset": str(2**53)}, "offset"),
        ({"offset": ""}, "offset"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it_and_stores_nothing(params: dict[str, str], field: str) -> None:
    job = submit(SUBMITTER_P1, "p1")["id"]
    before = jobs_stored()
    status, body = logs(SUBMITTER_P1, job, **params)
    assert status == 400, body
    assert [error["field"] for error in body["errors"]] == [field]
    assert jobs_stored() == before


@pytest.mark.usefixtures("api")
def test_a_reader_follows_a_queued_job_that_has_no_log_yet() -> None:
    job = submit(SUBMITTER_P1, "p1")["id"]
    status, part = logs(READER_P1, job, stream="stderr", offset="0")
    assert status == 200
    assert part == {
        "jobId": job,
        "stream": "stderr",
        "offset": 0,
        "nextOffset": 0,
        "text": "",
        "ended": False,
        "source": "none",
        "state": "queued",
    }
    outsider = principal("dee@example.com", set(), {"p1"})  # no role at all
    assert logs(outsider, job)[0] in (403, 404)
