"""The API client sends the platform key and the caller's token, and turns problems into ApiError."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hastegeo.cli.client import ApiClient, ApiError

SEEN: list[dict[str, str]] = []  # header names lower-cased: HTTP names are case-insensitive


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        SEEN.append({name.lower(): value for name, value in self.headers.items()})
        if self.path.startswith("/api/jobs/missing"):
            body = json.dumps({"title": "Job not found", "status": 404}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/problem+json")
            self.send_header("Retry-After", "7")
        else:
            body = json.dumps({"id": "j1", "state": "queued"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_key_and_token_are_sent(server: str) -> None:
    SEEN.clear()
    assert ApiClient(server, function_key="k3y", bearer_token="t0ken").get("j1")["state"] == "queued"
    assert SEEN[0]["x-functions-key"] == "k3y"
    assert SEEN[0]["authorization"] == "Bearer t0ken"
    ApiClient(server).get("j1")
    assert "authorization" not in SEEN[1]


def test_problems_become_api_errors_with_headers(server: str) -> None:
    with pytest.raises(ApiError) as caught:
        ApiClient(server).get("missing")
    assert caught.value.status == 404
    assert str(caught.value) == "404 Job not found"
    assert caught.value.headers["Retry-After"] == "7"
