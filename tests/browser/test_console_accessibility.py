"""Every console state nobody else shows, checked with axe-core: empty lists, each workload's form, refused
submissions, a failed job, an unknown job, and the sign-in states. (The other tests' states are checked by
``shoot`` as they are reached: the lists, each workload's job page with its outputs, the backends, the cancel
confirmation.) A serious or critical violation fails the test.
"""

from __future__ import annotations

import base64
import html
import json
import time
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


TENANT = "44444444-4444-4444-8444-444444444444"
CLIENT = "00000000-0000-0000-0000-000000000001"


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


class EntraStandIn:
    """Entra ID's endpoints as MSAL.js calls them: discovery, authorize (a redirect back) and token.

    The id token is unsigned (MSAL.js in the browser does not check signatures) but carries the
    claims MSAL does check: the nonce of the request, the issuer, the audience and the tenant.
    ``expires_in`` of the first token can be made short to see MSAL renew it with the refresh token.
    """

    def __init__(self, *, refuse: bool = False, first_expires_in: int = 3600) -> None:
        self.refuse, self.first_expires_in = refuse, first_expires_in
        self.nonce = ""
        self.authorize_calls = 0
        self.grants: list[str] = []

    def metadata(self, tenant: str) -> dict[str, Any]:
        base = f"{LOGIN}/{tenant}"
        return {
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "end_session_endpoint": f"{base}/oauth2/v2.0/logout",
            "issuer": f"{LOGIN}/{{tenantid}}/v2.0" if tenant in ("organizations", "common") else f"{base}/v2.0",
            "jwks_uri": f"{base}/discovery/v2.0/keys",
            "response_modes_supported": ["query", "fragment", "form_post"],
        }

    def id_token(self) -> str:
        now = int(time.time())
        claims = {
            "aud": CLIENT,
            "iss": f"{LOGIN}/{TENANT}/v2.0",
            "iat": now,
            "nbf": now,
            "exp": now + 3600,
            "nonce": self.nonce,
            "oid": "55555555-5555-4555-8555-555555555555",
            "sub": "subject",
            "tid": TENANT,
            "preferred_username": "someone@example.org",
            "name": "Some One",
            "ver": "2.0",
        }
        return f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(claims)}."

    def answer(self, route: Any) -> None:
        url = urlsplit(route.request.url)
        cors = {"Access-Control-Allow-Origin": route.request.headers.get("origin", "*")}
        if url.path.endswith("/.well-known/openid-configuration"):
            tenant = url.path.split("/")[1]
            route.fulfill(status=200, headers=cors, json=self.metadata(tenant))
        elif url.path.endswith("/discovery/instance"):
            route.fulfill(
                status=200,
                headers=cors,
                json={
                    "tenant_discovery_endpoint": f"{LOGIN}/organizations/v2.0/.well-known/openid-configuration",
                    "api-version": "1.1",
                    "metadata": [
                        {
                            "preferred_network": "login.microsoftonline.com",
                            "preferred_cache": "login.windows.net",
                            "aliases": ["login.microsoftonline.com", "login.windows.net"],
                        }
                    ],
                },
            )
        elif url.path.endswith("/authorize"):
            self.authorize_calls += 1
            query = {key: values[0] for key, values in parse_qs(url.query).items()}
            self.nonce = query.get("nonce", "")
            answer = (
                {"error": "access_denied", "error_description": "The user declined"}
                if self.refuse
                else {
                    "code": "c0de",
                    "client_info": _b64({"uid": "55555555-5555-4555-8555-555555555555", "utid": TENANT}),
                }
            )
            back = f"{query['redirect_uri']}?{urlencode({**answer, 'state': query['state']})}"
            # A page that sends the browser back (a 302 would bring the console back past the routes above).
            refresh = f'<meta http-equiv="refresh" content="0;url={html.escape(back)}">'
            route.fulfill(status=200, body=refresh, content_type="text/html")
        elif url.path.endswith("/token"):
            form = {key: values[0] for key, values in parse_qs(route.request.post_data or "").items()}
            self.grants.append(form.get("grant_type", ""))
            first = len(self.grants) == 1
            body = {
                "token_type": "Bearer",
                "scope": f"api://{CLIENT}/user_impersonation",
                "expires_in": self.first_expires_in if first else 3600,
                "ext_expires_in": 3600,
                "access_token": f"t0ken-{len(self.grants)}",
                "refresh_token": f"r3fresh-{len(self.grants)}",
                "id_token": self.id_token(),
                "client_info": _b64({"uid": "55555555-5555-4555-8555-555555555555", "utid": TENANT}),
            }
            route.fulfill(status=200, headers=cors, body=json.dumps(body), content_type="application/json")
        else:
            route.fulfill(status=404, headers=cors, body="{}", content_type="application/json")


def _signing_in(page: Any, console_stack: LocalStack, *, refuse: bool, first_expires_in: int = 3600) -> EntraStandIn:
    """The console as deployed with sign-in: its settings name a client, and Entra's endpoints answer."""
    entra = {
        "apiBase": "/api",
        "version": "test",
        "storageOrigin": "",
        "auth": {
            "mode": "entra",
            "clientId": CLIENT,
            "tenantId": "organizations",
            "origin": LOGIN,
            "authority": f"{LOGIN}/organizations/oauth2/v2.0",
            "scope": f"api://{CLIENT}/user_impersonation",
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
    stand_in = EntraStandIn(refuse=refuse, first_expires_in=first_expires_in)
    page.route(f"{LOGIN}/**", stand_in.answer)
    return stand_in


def test_the_development_caller(page: Any, shoot: Callable[[Any, str], Path]) -> None:
    page.goto("#/jobs?project=nobody-here")
    page.get_by_text("development caller").wait_for()
    page.get_by_text("No jobs.").wait_for()
    shoot(page, "signed-in-development")


def test_a_signed_in_caller(page: Any, console_stack: LocalStack, shoot: Callable[[Any, str], Path]) -> None:
    entra = _signing_in(page, console_stack, refuse=False)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.headers.get("authorization", "")))
    page.goto(f"{console_stack.console_url}#/jobs?project=nobody-here")
    page.get_by_text("signed in with Entra ID").wait_for()
    page.get_by_text("No jobs.").wait_for()
    shoot(page, "signed-in-entra")
    # MSAL.js signed in with the authorization code and PKCE, and the route survived the redirect
    assert entra.grants == ["authorization_code"]
    assert "Bearer t0ken-1" in sent
    assert urlsplit(page.url).fragment == "/jobs?project=nobody-here"
    assert "code=" not in page.url
    # nothing outlives the tab: MSAL's cache is in sessionStorage, never localStorage
    assert "t0ken" not in page.evaluate("JSON.stringify({...localStorage})")
    assert "r3fresh" not in page.evaluate("JSON.stringify({...localStorage})")


def test_an_expiring_token_is_renewed_silently(page: Any, console_stack: LocalStack) -> None:
    """A token that is about to expire is renewed with the refresh token, without leaving the page."""
    entra = _signing_in(page, console_stack, refuse=False, first_expires_in=60)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.headers.get("authorization", "")))
    page.goto(f"{console_stack.console_url}#/jobs?project=nobody-here")
    page.get_by_text("No jobs.").wait_for()
    page.goto(f"{console_stack.console_url}#/jobs?project=someone-else")  # the next API calls
    page.wait_for_function("() => location.hash.includes('someone-else')")
    page.get_by_text("No jobs.").wait_for()
    page.wait_for_timeout(300)
    assert entra.grants[:2] == ["authorization_code", "refresh_token"], entra.grants
    assert entra.authorize_calls == 1, "renewed without a second sign-in"
    assert any(header.startswith("Bearer t0ken-2") for header in sent), sent


def test_a_refused_sign_in(page: Any, console_stack: LocalStack, shoot: Callable[[Any, str], Path]) -> None:
    _signing_in(page, console_stack, refuse=True)
    page.goto(f"{console_stack.console_url}#/jobs?project=nobody-here")
    page.get_by_role("alert").filter(has_text="Sign-in failed").wait_for()
    shoot(page, "sign-in-refused")
