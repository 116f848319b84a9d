"""The API client sends the platform key and the caller's token, and turns problems into ApiError."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

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


class KeepAliveHandler(BaseHTTPRequestHandler):
    """HTTP/1.1: connections stay open between requests. Records the client port of each request;
    ``/api/jobs/drop`` answers and then drops the connection without saying so (an idle timeout)."""

    protocol_version = "HTTP/1.1"
    ports: ClassVar[list[int]] = []
    posts: ClassVar[int] = 0

    def _answer(self, body: bytes) -> None:
        type(self).ports.append(self.client_address[1])
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if self.path.endswith("/drop"):
            self.close_connection = True

    def do_GET(self) -> None:
        self._answer(b'{"id": "j1", "state": "queued"}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).posts += 1
        self._answer(b'{"id": "j2"}')

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def keep_alive_server() -> Iterator[str]:
    KeepAliveHandler.ports, KeepAliveHandler.posts = [], 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), KeepAliveHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_one_connection_carries_a_threads_requests(keep_alive_server: str) -> None:
    client = ApiClient(keep_alive_server)
    for _ in range(5):
        assert client.get("j1")["state"] == "queued"
    assert client.submit({"workload": "artifacts"})["id"] == "j2"
    assert len(KeepAliveHandler.ports) == 6
    assert len(set(KeepAliveHandler.ports)) == 1


def test_each_thread_has_its_own_connection(keep_alive_server: str) -> None:
    client = ApiClient(keep_alive_server)
    barrier = threading.Barrier(3)

    def work() -> None:
        barrier.wait()
        for _ in range(3):
            client.get("j1")

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(KeepAliveHandler.ports) == 9
    assert len(set(KeepAliveHandler.ports)) == 3


def test_a_connection_the_server_closed_is_replaced_once(keep_alive_server: str) -> None:
    client = ApiClient(keep_alive_server)
    client.get("drop")  # the server closes this connection after answering
    assert client.submit({"workload": "artifacts"})["id"] == "j2"
    assert KeepAliveHandler.posts == 1  # sent once, on a new connection
    assert len(set(KeepAliveHandler.ports)) == 2


def test_a_server_that_closes_every_connection_still_works(server: str) -> None:
    client = ApiClient(server)  # an HTTP/1.0 server: every answer closes its connection
    assert [client.get("j1")["state"] for _ in range(3)] == ["queued"] * 3
