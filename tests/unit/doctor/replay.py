"""An azure-core transport that answers the real SDK clients from recorded response files.

Each file under ``responses/`` holds one HTTP answer: ``status``, ``body`` and ``source``,
the Microsoft document its shape was taken from (REST API specification example, a Learn
page or a recorded `az` output), with ``changed`` listing what was put in for this
deployment (names, ids, quota numbers). The transport builds the same response objects
azure-core's own requests transport returns, so each client parses them exactly as it
would parse Azure's; a request no route matches fails the test.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from azure.core.credentials import AccessToken
from azure.core.pipeline._tools import handle_non_stream_rest_response, is_rest
from azure.core.pipeline.transport import HttpTransport
from azure.core.pipeline.transport._requests_basic import RequestsTransportResponse
from azure.core.rest._requests_basic import RestRequestsTransportResponse
from requests.structures import CaseInsensitiveDict
from urllib3.response import HTTPResponse

RESPONSES = Path(__file__).parent / "responses"


def recorded(name: str, **replace: Any) -> dict[str, Any]:
    """A response file; ``replace`` swaps top-level keys of its body (a documented failing variant)."""
    data: dict[str, Any] = json.loads((RESPONSES / f"{name}.json").read_text(encoding="utf-8"))
    assert data.get("source"), f"{name}.json names no source"
    if replace:
        data = {**data, "body": {**data["body"], **replace}}
    return data


@dataclass
class Route:
    method: str
    pattern: str  # a regular expression searched in the URL
    answer: dict[str, Any]


@dataclass
class ReplayTransport(HttpTransport):
    routes: list[Route] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def add(self, method: str, pattern: str, answer: dict[str, Any]) -> ReplayTransport:
        """Routes added later win, so a test can override one answer of a healthy deployment."""
        self.routes.insert(0, Route(method, pattern, answer))
        return self

    def __enter__(self) -> ReplayTransport:
        return self

    def __exit__(self, *args: object) -> None:
        return None

    def open(self) -> None:
        return None

    def close(self) -> None:
        return None

    def send(self, request: Any, **kwargs: Any) -> Any:
        self.requests.append(f"{request.method} {request.url}")
        for route in self.routes:
            if route.method == request.method and re.search(route.pattern, request.url):
                return self._respond(request, route.answer, **kwargs)
        raise AssertionError(f"no recorded answer for {request.method} {request.url}")

    @staticmethod
    def _respond(request: Any, answer: dict[str, Any], **kwargs: Any) -> Any:
        status = int(answer.get("status", 200))
        headers = {"Content-Type": "application/json; charset=utf-8"}
        content = json.dumps(answer.get("body", {})).encode()
        internal = requests.Response()
        internal.status_code = status
        internal.reason = "OK" if status < 400 else "Error"
        internal.headers = CaseInsensitiveDict(headers)
        internal.url = request.url
        # the body as urllib3 would hand it to requests, so azure-core reads it the way it reads Azure's
        internal.raw = HTTPResponse(body=io.BytesIO(content), headers=headers, status=status, preload_content=False)
        if is_rest(request):
            response = RestRequestsTransportResponse(request=request, internal_response=internal)
            if not kwargs.get("stream"):
                handle_non_stream_rest_response(response)
            return response
        return RequestsTransportResponse(request, internal)


class StaticCredential:
    """A token credential that needs no sign-in; the transport never checks the token."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("token", 4_102_444_800)


def urls(transport: ReplayTransport) -> Iterator[str]:
    yield from transport.requests
