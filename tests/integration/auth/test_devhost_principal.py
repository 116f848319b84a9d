"""The development host stands in for App Service authentication: it injects HASTE_DEV_PRINCIPAL's caller."""

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
        body = {"name": parse_principal(header).name if header else None}
        return func.HttpResponse(json.dumps(body), mimetype="application/json")

    return app


def whoami(host: DevHost, headers: dict[str, str] | None = None) -> object:
    request = urllib.request.Request(f"{host.api_url}/whoami", headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["name"]


def start(environ: dict[str, str]) -> DevHost:
    return DevHost(echo_app(), host_json=HostConfig(), environ=environ, run_queues=False).start()


def test_the_configured_caller_is_injected_only_where_none_was_sent(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="hastegeo_dev.devhost.host"):
        host = start({"HASTE_DEV_PRINCIPAL": "name=dev@example.com;roles=Haste.Admin;projects=demo,p1"})
    try:
        assert whoami(host) == "dev@example.com"
        own = encode_principal(Principal("eve@example.com", roles=frozenset({Role.READER})))
        assert whoami(host, {PRINCIPAL_HEADER: own}) == "eve@example.com"
        assert whoami(host, {PRINCIPAL_HEADER.lower(): own}) == "eve@example.com"
    finally:
        host.stop()
    announced = [r.getMessage() for r in caplog.records if "HASTE_DEV_PRINCIPAL" in r.getMessage()]
    assert len(announced) == 1
    assert "dev@example.com" in announced[0]
    assert "Haste.Admin" in announced[0]
    assert "demo, p1" in announced[0]


def test_without_the_setting_nothing_is_injected() -> None:
    host = start({})
    try:
        assert whoami(host) is None
    finally:
        host.stop()


def test_a_malformed_dev_principal_stops_the_host_at_start() -> None:
    with pytest.raises(DevHostError, match="HASTE_DEV_PRINCIPAL: unknown role"):
        start({"HASTE_DEV_PRINCIPAL": "name=x;roles=Haste.Owner"})
