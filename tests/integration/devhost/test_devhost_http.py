"""The development host serves the sample app's HTTP triggers like the Functions host (real server, real Azurite)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Callable

import pytest
from devhost_helpers import Running, call

pytestmark = pytest.mark.azurite

ORIGIN = "http://localhost:3000"


@pytest.fixture
def running(start_host: Callable[..., Running]) -> Running:
    return start_host(cors_allowed_origins=[ORIGIN], max_body_bytes=1024)


def test_route_params_query_headers_body_and_method_reach_the_function(running: Running) -> None:
    reply = call(running.host.base_url, "POST", "/api/items/42?name=x&flag=&name=y", b"payload", {"X-Test": "yes"})
    assert reply.status == 201
    assert reply.headers["content-type"] == "application/json"
    seen = reply.json()
    assert seen["route"] == {"id": "42"}
    assert seen["params"] == {"name": "x,y"}  # as the Functions host passes them: repeats joined, empty left out
    assert seen["method"] == "POST"
    assert seen["header"] == "yes"
    assert seen["body"] == "payload"
    assert seen["url"] == f"{running.host.base_url}/api/items/42?name=x&flag=&name=y"


def test_a_repeated_header_reaches_the_function_joined_with_commas(running: Running) -> None:
    connection = http.client.HTTPConnection(running.host.base_url.removeprefix("http://"), timeout=10)
    try:
        connection.putrequest("POST", "/api/items/42")
        for value in ("a", "b c"):
            connection.putheader("X-Test", value)
        connection.putheader("Content-Length", "0")
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 201
        assert json.loads(response.read())["header"] == "a,b c"  # as the Functions host passes it
    finally:
        connection.close()


def test_response_status_headers_and_body_are_written_back(running: Running) -> None:
    reply = call(running.host.base_url, "GET", "/api/hello")
    assert (reply.status, reply.body) == (200, b"hello")
    assert reply.headers["x-sample"] == "1"
    assert reply.headers["content-type"] == "text/plain; charset=utf-8"
    assert running.host.api_url == running.host.base_url + "/api"


def test_literal_routes_win_and_catch_all_keeps_slashes(running: Running) -> None:
    assert call(running.host.base_url, "GET", "/api/items/special").json() == {"special": True}
    assert call(running.host.base_url, "GET", "/api/files/a/b%20c.txt").json() == {"path": "a/b c.txt"}


def test_async_handlers_and_context_are_supported(running: Running) -> None:
    assert call(running.host.base_url, "GET", "/api/async").body == b"async ok"
    assert call(running.host.base_url, "GET", "/api/ctx").json()["function"] == "ctx"


def test_unknown_route_is_404_problem_json(running: Running) -> None:
    for path in ("/api/nope", "/api/items/1/2", "/items/1"):  # one segment too many; no prefix
        reply = call(running.host.base_url, "GET", path)
        assert reply.status == 404
        assert reply.headers["content-type"] == "application/problem+json"
        assert reply.json()["status"] == 404


def test_wrong_method_is_405_with_allow(running: Running) -> None:
    reply = call(running.host.base_url, "DELETE", "/api/items/1")
    assert reply.status == 405
    assert reply.headers["allow"] == "GET, POST"
    assert reply.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "FOO"])
def test_a_method_no_handler_serves_is_routed_like_any_other(running: Running, method: str) -> None:
    """http.server answers such a method itself with a 501 HTML page; the platform's answer is a 405 or 404."""
    reply = call(running.host.base_url, method, "/api/items/1")
    assert reply.status == 405
    assert reply.headers["allow"] == "GET, POST"
    assert reply.headers["content-type"] == "application/problem+json"
    assert call(running.host.base_url, method, "/api/nope").status == 404


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (b"GET /api/items/" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        (b"GET /api/items/1 HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n", 431),
        (b"GET /api/items/1 HTTP/9.9\r\nHost: x\r\n\r\n", 505),
        (b"NOT A REQUEST LINE AT ALL\r\n\r\n", 400),
    ],
)
def test_what_the_server_refuses_before_routing_is_a_problem_too(
    running: Running, request_head: bytes, status: int
) -> None:
    reply, _ = _raw(running.host.base_url, request_head)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == str(status).encode(), reply[:200]
    assert b"content-type: application/problem+json" in head.lower()
    assert json.loads(body)["status"] == status
    assert b"<html" not in body.lower()


def test_a_failing_function_is_a_generic_500_and_logged(running: Running, caplog: pytest.LogCaptureFixture) -> None:
    reply = call(running.host.base_url, "GET", "/api/boom")
    assert reply.status == 500
    assert reply.headers["content-type"] == "application/problem+json"
    assert b"must not leak" not in reply.body
    assert b"Traceback" not in reply.body
    assert "internal detail that must not leak" in caplog.text


def test_oversized_bodies_are_413_before_the_function_runs(running: Running) -> None:
    assert call(running.host.base_url, "POST", "/api/size", b"x" * 1024).json() == {"bytes": 1024}
    reply = call(running.host.base_url, "POST", "/api/size", b"x" * 1025)
    assert reply.status == 413
    assert reply.headers["content-type"] == "application/problem+json"


def test_chunked_bodies_are_read_and_limited(running: Running) -> None:
    def chunked(total: int) -> int:
        host, port = running.host.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            body = (
                b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in [b"a" * 500] * (total // 500)) + b"0\r\n\r\n"
            )
            head = b"POST /api/size HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            sock.sendall(head + body)
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        return int(reply.split(b" ", 2)[1])

    assert chunked(1000) == 200
    assert chunked(1500) == 413


def test_cors_preflight_for_an_allowed_origin(running: Running) -> None:
    reply = call(
        running.host.base_url,
        "OPTIONS",
        "/api/items/1",
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-test",
        },
    )
    assert reply.status == 204
    assert reply.headers["access-control-allow-origin"] == ORIGIN
    assert reply.headers["access-control-allow-methods"] == "POST"
    assert reply.headers["access-control-allow-headers"] == "content-type, x-test"
    assert int(reply.headers["access-control-max-age"]) > 0


def test_cors_preflight_for_another_origin_gets_no_cors_headers(running: Running) -> None:
    reply = call(
        running.host.base_url,
        "OPTIONS",
        "/api/items/1",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert not any(name.startswith("access-control-") for name in reply.headers)


def test_cors_headers_on_ordinary_responses_only_for_allowed_origins(running: Running) -> None:
    allowed = call(running.host.base_url, "GET", "/api/hello", headers={"Origin": ORIGIN})
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    assert allowed.headers["vary"] == "Origin"
    denied = call(running.host.base_url, "GET", "/api/hello", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in denied.headers
    assert denied.status == 200  # the browser, not the server, blocks it


def test_queue_output_binding_is_sent_and_triggers_its_consumer(running: Running) -> None:
    reply = call(running.host.base_url, "POST", "/api/enqueue", json.dumps({"key": "out-1"}).encode())
    assert reply.status == 202
    assert running.recorder.wait_for(lambda r: len(r.of("out-1")) == 1, timeout=5)


def test_function_keys_not_enforced_is_logged_at_start(
    start_host: Callable[..., Running], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="hastegeo_dev.devhost")
    start_host()
    assert caplog.text.count("function keys are not enforced") == 1


def _raw(base_url: str, request: bytes, *, read_timeout: float = 10) -> tuple[bytes, float]:
    """Send ``request`` on a fresh loopback socket; the whole answer (until the server closes) and how long it took."""
    host, port = base_url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=read_timeout) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return reply, time.monotonic() - started


def test_a_stalled_body_is_a_408_within_the_timeout_closes_and_others_are_served(
    start_host: Callable[..., Running],
) -> None:
    running = start_host(body_timeout_s=1.0)
    base = running.host.base_url
    results: dict[str, tuple[bytes, float]] = {}
    # Promises 100 bytes, sends 10, then waits: the server must not wait with it.
    stalled = b"POST /api/size HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 10
    thread = threading.Thread(target=lambda: results.setdefault("stalled", _raw(base, stalled)))
    thread.start()
    time.sleep(0.2)
    # Meanwhile other requests are served at once.
    served = time.monotonic()
    assert call(base, "GET", "/api/hello").body == b"hello"
    assert call(base, "POST", "/api/size", b"x" * 100).json() == {"bytes": 100}
    assert time.monotonic() - served < 1.0
    thread.join(timeout=10)
    reply, took = results["stalled"]
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == b"408", reply
    assert b"content-type: application/problem+json" in head.lower()
    assert b"connection: close" in head.lower()
    assert json.loads(body)["status"] == 408
    assert 0.9 < took < 5, took  # the timeout, then the answer; the server closed the connection (recv ended)


def test_a_body_cut_short_by_the_client_is_a_400_not_a_truncated_request(running: Running) -> None:
    host, port = running.host.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /api/size HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)
        sock.shutdown(socket.SHUT_WR)  # the client is done sending: 10 of 100 bytes
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.split(b" ", 2)[1] == b"400", reply
    assert b"10 of 100 bytes" in reply
