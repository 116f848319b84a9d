"""Every console state nobody else shows, checked with axe-core: empty lists, each workload's form, refused
submissions, a failed job, an unknown job, and the sign-in states. (The other tests' states are checked by
``shoot`` as they are reached: the lists, each workload's job page with its outputs, the backends, the cancel
confirmation.) A serious or critical violation fails the test.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from azure.storage.blob import BlobServiceClient

from api.openapi import openapi_document
from hastegeo.models.job import OutputRecord
from hastegeo.store.jobs import JobStore
from hastegeo_dev.stack import LocalStack
from tests.browser.conftest import finished_job

pytestmark = [pytest.mark.azurite, pytest.mark.slow]
LOGIN = "https://login.microsoftonline.com"
WORKLOADS = openapi_document()["components"]["schemas"]["JobRequest"]["properties"]["workload"]["enum"]


def test_an_empty_list_and_an_unknown_job(page: Any, shoot: Callable[[Any, str], Path]) -> None:
    page.goto("#/jobs?project=nobody-here")
    page.get_by_text("No jobs.").wait_for()
    shoot(page, "jobs-empty")
    page.goto("#/job/no-such-job-0000")
    page.get_by_role("alert").wait_for()
    shoot(page, "job-unknown")


@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_empty_form_of_each_workload(page: Any, shoot: Callable[[Any, str], Path], workload: str) -> None:
    page.goto(f"#/submit?workload={workload}")
    page.locator("legend", has_text=f"Parameters of {workload}").wait_for()
    shoot(page, f"submit-form-{workload}")


def test_a_refused_backend_is_placed_on_its_field(page: Any, shoot: Callable[[Any, str], Path]) -> None:
    """A backend that is not enabled: a 409 placed on the backend field (parameter and project refusals are
    checked in test_console_jobs)."""
    page.goto("#/submit?workload=artifacts")
    page.get_by_label("Input blobs").fill("demo/a.txt")
    page.get_by_label("Backend").select_option("azure_batch")
    page.get_by_role("button", name="Submit job").click()
    error = page.locator('[data-field="backend"] .error')
    error.wait_for()
    assert page.get_by_label("Backend").get_attribute("aria-describedby") == error.get_attribute("id")
    shoot(page, "submit-refused-backend")


def test_a_failed_job(page: Any, console_stack: LocalStack, shoot: Callable[[Any, str], Path]) -> None:
    container = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string)
    job = finished_job("a11y-failed-0001", "a11y", datetime.now(UTC) - timedelta(minutes=5), "no valid pixel")
    JobStore(container.get_container_client("haste-jobs")).create(job)
    page.goto(f"#/job/{job.id}")
    page.locator("h1 .badge", has_text="failed").wait_for()
    shoot(page, "job-failed")
    page.goto("#/jobs?project=a11y&state=failed")
    page.locator(f"tr[data-job='{job.id}']").wait_for()
    shoot(page, "jobs-failed")


def test_an_artifacts_job_with_its_outputs(
    page: Any, console_stack: LocalStack, shoot: Callable[[Any, str], Path]
) -> None:
    """The one workload the demo chain test does not open: its page with an outputs table (written to the store)."""
    container = BlobServiceClient.from_connection_string(console_stack.azurite.connection_string)
    job = finished_job(
        "a11y-artifacts-0001", "a11y", datetime.now(UTC) - timedelta(minutes=5), None, workload="artifacts"
    )
    names = ("outputs/artifacts.zip", "outputs/manifest.json", "logs/progress.jsonl")
    job.outputs = [OutputRecord(name=name, blob=f"haste-outputs/jobs/{job.id}/{name}", size=1024) for name in names]
    JobStore(container.get_container_client("haste-jobs")).create(job)
    page.goto(f"#/job/{job.id}")
    page.locator("table.outputs tr", has_text="outputs/artifacts.zip").wait_for()
    shoot(page, "job-artifacts")


def _signing_in(page: Any, console_stack: LocalStack, *, refuse: bool) -> None:
    """The console as deployed with sign-in: its settings name a client, and Entra's two endpoints answer."""
    entra = {
        "apiBase": "/api",
        "version": "test",
        "storageOrigin": "",
        "auth": {
            "mode": "entra",
            "clientId": "00000000-0000-0000-0000-000000000001",
            "tenantId": "organizations",
            "origin": LOGIN,
            "authority": f"{LOGIN}/organizations/oauth2/v2.0",
            "scope": "api://00000000-0000-0000-0000-000000000001/user_impersonation",
        },
    }
    page.route("**/api/console/config.json", lambda route: route.fulfill(json=entra))

    def document(route: Any) -> None:
        # The policy the app sends when sign-in is configured: the token request may go to Entra.
        response = route.fetch()
        headers = {**response.headers}
        headers["content-security-policy"] = headers["content-security-policy"].replace(
            "connect-src 'self'", f"connect-src 'self' {LOGIN}"
        )
        route.fulfill(response=response, headers=headers)

    page.route(lambda url: urlsplit(url).path == "/api/console/", document)

    def entra_answers(route: Any) -> None:
        url = urlsplit(route.request.url)
        if url.path.endswith("/authorize"):
            query = parse_qs(url.query)
            answer = (
                {"error": "access_denied", "error_description": "The user declined"} if refuse else {"code": "c0de"}
            )
            back = f"{query['redirect_uri'][0]}?{urlencode({**answer, 'state': query['state'][0]})}"
            # A page that sends the browser back (a 302 would bring the console back past the routes above).
            refresh = f'<meta http-equiv="refresh" content="0;url={html.escape(back)}">'
            route.fulfill(status=200, body=refresh, content_type="text/html")
        else:
            cors = {"Access-Control-Allow-Origin": route.request.headers.get("origin", "*")}
            route.fulfill(
                status=200,
                headers=cors,
                body=json.dumps({"access_token": "t0ken", "expires_in": 3600}),
                content_type="application/json",
            )

    page.route(f"{LOGIN}/**", entra_answers)


def test_the_development_caller(page: Any, shoot: Callable[[Any, str], Path]) -> None:
    page.goto("#/jobs?project=nobody-here")
    page.get_by_text("development caller").wait_for()
    page.get_by_text("No jobs.").wait_for()
    shoot(page, "signed-in-development")


def test_a_signed_in_caller(page: Any, console_stack: LocalStack, shoot: Callable[[Any, str], Path]) -> None:
    _signing_in(page, console_stack, refuse=False)
    page.goto(f"{console_stack.console_url}#/jobs?project=nobody-here")
    page.get_by_text("signed in with Entra ID").wait_for()
    page.get_by_text("No jobs.").wait_for()
    shoot(page, "signed-in-entra")


def test_a_refused_sign_in(page: Any, console_stack: LocalStack, shoot: Callable[[Any, str], Path]) -> None:
    _signing_in(page, console_stack, refuse=True)
    page.goto(f"{console_stack.console_url}#/jobs?project=nobody-here")
    page.get_by_role("alert").filter(has_text="Sign-in failed").wait_for()
    shoot(page, "sign-in-refused")
