"""The development host stands in for App Service authentication: it injects HASTE_DEV_PRINCIPAL's caller,
and, like the platform, never believes identity headers a client sends unless told to (a test acting as others)."""

from __future__ import annotations

import json
import logging
import urllib.request

import azure.functions as func
import pytest

from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal, parse_principal
from hastegeo_dev.devhost.functions import DevHostError
from hastegeo_dev.devhost.host import DevHost
from hastegeo_dev.devhost.hostjson import HostConfig


def echo_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.route(route="whoami", methods=["GET"])
    def whoami(req: func.HttpRequest) -> func.HttpResponse:
        header = req.headers.get(PRINCIPAL_HEADER)
        platform = sorted(
            k.lower() for k in req.headers if k.lower().startswith(("x-ms-client-principal", "x-ms-token-"))
        )
        body = {"name": parse_principal(header).name if header else None, "platform": platform}
        return func.HttpResponse(json.dumps(body), mimetype="application/json")

    return app


def whoami(host: DevHost, headers: dict[str, str] | None = None) -> object:
    return seen(host, headers)["name"]


def seen(host: DevHost, headers: dict[str, str] | None = None) -> dict[str, object]:
    request = urllib.request.Request(f"{host.api_url}/whoami", headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def start(environ: dict[str, str]) -> DevHost:
    return DevHost(echo_app(), host_json=HostConfig(), environ=environ, run_queues=False).start()


EVE = encode_principal(Principal("eve@example.com", roles=frozenset({Role.READER})))
# What App Service sets beside the principal, and the provider's tokens: a client may send none of them.
EASY_AUTH = {
    "X-MS-CLIENT-PRINCIPAL-NAME": "eve@example.com",
    "X-MS-CLIENT-PRINCIPAL-ID": "oid-eve",
    "X-MS-CLIENT-PRINCIPAL-IDP": "aad",
    "X-MS-TOKEN-AAD-ACCESS-TOKEN": "forged",
}


def test_client_sent_identity_headers_are_dropped_and_the_configured_caller_injected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="hastegeo_dev.devhost.host"):
        host = start({"HASTE_DEV_PRINCIPAL": "name=dev@example.com;roles=Haste.Admin;projects=demo,p1"})
    try:
        assert whoami(host) == "dev@example.com"
        for name in (PRINCIPAL_HEADER, PRINCIPAL_HEADER.lower(), "x-Ms-Client-Principal"):
            answer = seen(host, {name: EVE, **EASY_AUTH})
            assert answer == {"name": "dev@example.com", "platform": ["x-ms-client-principal"]}, name
    finally:
        host.stop()
    messages = [r.getMessage() for r in caplog.records]
    announced = [m for m in messages if "HASTE_DEV_PRINCIPAL" in m]
    assert len(announced) == 1
    assert "dev@example.com" in announced[0]
    assert "Haste.Admin" in announced[0]
    assert "demo, p1" in announced[0]
    said = [m for m in messages if "HASTE_DEV_TRUST_CLIENT_PRINCIPAL" in m]
    assert len(said) == 1
    assert "removed" in said[0]


def test_without_any_setting_a_client_sent_principal_reaches_nobody() -> None:
    host = start({})
    try:
        assert seen(host, {PRINCIPAL_HEADER: EVE, **EASY_AUTH}) == {"name": None, "platform": []}
    finally:
        host.stop()


def test_trusting_client_principals_is_a_setting_and_said_loudly(caplog: pytest.LogCaptureFixture) -> None:
    settings = {
        "HASTE_DEV_PRINCIPAL": "name=dev@example.com;roles=Haste.Admin",
        "HASTE_DEV_TRUST_CLIENT_PRINCIPAL": "true",
    }
    with caplog.at_level(logging.INFO, logger="hastegeo_dev.devhost.host"):
        host = start(settings)
    try:
        assert whoami(host) == "dev@example.com"
        assert whoami(host, {PRINCIPAL_HEADER: EVE}) == "eve@example.com"
        assert whoami(host, {PRINCIPAL_HEADER.lower(): EVE}) == "eve@example.com"
    finally:
        host.stop()
    warned = [r for r in caplog.records if "HASTE_DEV_TRUST_CLIENT_PRINCIPAL=true" in r.getMessage()]
    assert len(warned) == 1
    assert warned[0].levelno == logging.WARNING
    assert "anyone" in warned[0].getMessage()


def test_an_unreadable_trust_setting_stops_the_host_at_start() -> None:
    with pytest.raises(DevHostError, match="HASTE_DEV_TRUST_CLIENT_PRINCIPAL: 'maybe' is not true or false"):
        start({"HASTE_DEV_TRUST_CLIENT_PRINCIPAL": "maybe"})


def test_without_the_setting_nothing_is_injected() -> None:
    host = start({})
    try:
        assert whoami(host) is None
    finally:
        host.stop()


def test_a_malformed_dev_principal_stops_the_host_at_start() -> None:
    with pytest.raises(DevHostError, match="HASTE_DEV_PRINCIPAL: unknown role"):
        start({"HASTE_DEV_PRINCIPAL": "name=x;roles=Haste.Owner"})
