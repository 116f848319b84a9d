"""Serve HTTP-triggered functions on loopback with the standard library.

The Functions host routes ``/<routePrefix>/<route>`` to a function, hands
it an ``azure.functions.HttpRequest`` and writes back its ``HttpResponse``.
This server does the same with ``http.server.ThreadingHTTPServer`` (one
thread per connection), plus what the platform adds around function code:
CORS (see ``cors``), a request-size limit (413 before the function runs),
a body read timeout (408 when a client sends fewer bytes than its
``Content-Length`` and then stalls, so a stalled client holds its own
connection thread for seconds, not forever), and RFC 9457 problem+json
bodies for 400/404/405/408/413/500 that never carry a traceback.
Function keys are not checked, as with Core Tools locally.
``default_headers`` are added to each request that lacks them (the host uses
this to stand in for App Service authentication's ``X-MS-CLIENT-PRINCIPAL``);
headers named by ``platform_prefixes`` are removed from what the client sent
first, as App Service removes the identity headers only it may set.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import urlsplit

import azure.functions as func

from hastegeo_dev.devhost.cors import CorsPolicy, is_preflight
from hastegeo_dev.devhost.functions import HttpFunction, OutValue, invoke
from hastegeo_dev.devhost.outputs import OutputSender
from hastegeo_dev.devhost.query import query_params
from hastegeo_dev.devhost.routes import MethodNotAllowed, RouteTable

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 100 * 1024 * 1024  # the Functions host's default request limit
# Longest wait for the next bytes of a request body; a client silent that long gets a 408.
DEFAULT_BODY_TIMEOUT_S = 5.0
PROBLEM_JSON = "application/problem+json"
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})


class _BodyTooLarge(Exception):
    pass


class _BadRequest(Exception):
    pass


class _BodyTimeout(Exception):
    pass


def problem(status: int, detail: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """A problem+json response (status, headers, body)."""
    title = HTTPStatus(status).phrase
    body = json.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail}).encode()
    return status, [("Content-Type", PROBLEM_JSON)], body


def to_wire(result: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """Convert what a function returned into (status, headers, body), as the Python worker does."""
    if result is None:
        return 204, [], b""
    if isinstance(result, str | bytes):
        result = func.HttpResponse(result)
    if not isinstance(result, func.HttpResponse):
        raise TypeError(f"an HTTP function returned {type(result).__name__}, expected azure.functions.HttpResponse")
    # The server frames the body itself; framing headers from the function would contradict it.
    headers = [(str(k), str(v)) for k, v in result.headers.items() if str(k).lower() not in _FRAMING_HEADERS]
    if not any(k.lower() == "content-type" for k, _ in headers):
        mimetype = result.mimetype or "text/plain"
        charset = f"; charset={result.charset}" if mimetype.startswith("text/") and result.charset else ""
        headers.append(("Content-Type", mimetype + charset))
    return int(result.status_code), headers, result.get_body()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog is 5: a burst of clients would see
    # connection resets instead of waiting their turn.
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], host: DevHttpServer) -> None:
        super().__init__(address, _Handler)
        self.devhost = host

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-response is not the host's error; keep it out of stderr.
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "haste-devhost"

    def _serve(self) -> None:
        cast(_Server, self.server).devhost.handle(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What ``http.server`` answers by itself, as problem+json like every other answer, not its HTML page.

        A method no ``do_`` serves (TRACE, a made-up one) is routed like any other, so it is a 405 naming
        what the route takes, or a 404; a request line over 64 KiB (414), headers it cannot read (431),
        a malformed request line (400) close the connection, as ``http.server`` does.
        """
        if code == HTTPStatus.NOT_IMPLEMENTED and self.command:
            self._serve()
            return
        status, headers, body = problem(code, message or HTTPStatus(code).phrase)
        if not str(self.request_version).startswith("HTTP/1."):  # unread or unknown: answer with a status line
            self.request_version = self.protocol_version
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - " + format, self.address_string(), *args)


class DevHttpServer:
    """HTTP triggers under ``/<route_prefix>/`` on ``host:port`` (0 picks a free port)."""

    def __init__(
        self,
        functions: Sequence[HttpFunction],
        *,
        route_prefix: str = "api",
        host: str = "127.0.0.1",
        port: int = 0,
        cors: CorsPolicy | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        outputs: OutputSender | None = None,
        default_headers: Mapping[str, str] | None = None,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
        platform_prefixes: Sequence[str] = (),
    ) -> None:
        """``body_timeout_s``: how long a request body may pause between reads before the answer is a 408.
        ``platform_prefixes``: header names (lower case prefixes) only the platform sets; a client's are dropped."""
        self._routes: RouteTable[HttpFunction] = RouteTable(route_prefix)
        for function in functions:
            self._routes.add(function.route, function.methods, function)
        self._cors = cors or CorsPolicy()
        self._max_body = max_body_bytes
        self._body_timeout_s = body_timeout_s
        self._outputs = outputs
        self._default_headers = dict(default_headers or {})
        self._platform_prefixes = tuple(prefix.lower() for prefix in platform_prefixes)
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._base_url = ""

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` once started (the route prefix is not included)."""
        if not self._base_url:
            raise RuntimeError("the HTTP server is not started")
        return self._base_url

    def start(self) -> None:
        self._server = _Server(self._address, self)
        host, port = self._server.server_address[:2]
        self._base_url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="devhost-http"
        )
        self._thread.start()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    # -- one request -----------------------------------------------------------------------------

    def handle(self, request: _Handler) -> None:
        started = time.monotonic()
        method = request.command.upper()
        origin = request.headers.get("Origin")
        status, headers, body = self._respond(request, method, origin)
        headers += list(self._cors.response_headers(origin).items())
        request.send_response(status)
        for name, value in headers:
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        if request.close_connection:
            request.send_header("Connection", "close")
        request.end_headers()
        if method != "HEAD":
            request.wfile.write(body)
        log.info(
            "%s %s -> %d (%.0f ms)", method, urlsplit(request.path).path, status, 1000 * (time.monotonic() - started)
        )

    def _respond(self, request: _Handler, method: str, origin: str | None) -> tuple[int, list[tuple[str, str]], bytes]:
        requested = request.headers.get("Access-Control-Request-Method")
        if is_preflight(method, origin, requested):
            allowed = self._cors.preflight_headers(
                origin, requested or "", request.headers.get("Access-Control-Request-Headers")
            )
            if allowed is not None:
                self._discard_body(request)
                return 204, list(allowed.items()), b""
        url = urlsplit(request.path)
        resolved = self._routes.resolve(method, url.path)
        if resolved is None:
            self._discard_body(request)
            return problem(404, "No function matches this route.")
        if isinstance(resolved, MethodNotAllowed):
            self._discard_body(request)
            status, headers, body = problem(405, f"This route accepts {', '.join(sorted(resolved.allowed))}.")
            return status, [*headers, ("Allow", ", ".join(sorted(resolved.allowed)))], body
        try:
            payload = self._read_body(request)
        except _BodyTooLarge:
            request.close_connection = True
            return problem(413, f"The request body exceeds {self._max_body} bytes.")
        except _BadRequest as exc:
            request.close_connection = True
            return problem(400, str(exc))
        except _BodyTimeout:
            # The rest of the body may still arrive: this connection cannot carry another request.
            request.close_connection = True
            return problem(408, f"The request body stopped arriving for {self._body_timeout_s:g} s.")
        function = resolved.target
        host = request.headers.get("Host") or self.base_url.removeprefix("http://")
        # A repeated header reaches the function joined with "," (ASP.NET's StringValues), as deployed.
        sent = {
            k: ",".join(request.headers.get_all(k) or [])
            for k in set(request.headers.keys())
            if not k.lower().startswith(self._platform_prefixes)
        }
        present = {k.lower() for k in sent}
        sent.update({k: v for k, v in self._default_headers.items() if k.lower() not in present})
        http_request = func.HttpRequest(
            method=method,
            url=f"http://{host}{request.path}",
            headers=sent,
            params=query_params(url.query),
            route_params=resolved.route_params,
            body=payload,
        )
        outs = {output.arg_name: OutValue() for output in function.outputs}
        try:
            result = invoke(function.handler, function.name, function.arg_name, http_request, outs)
            wire = to_wire(result)
            if self._outputs is not None:
                self._outputs.send(function.outputs, outs)
        except Exception:
            log.exception("function %s failed on %s %s", function.name, method, url.path)
            return problem(500, "The function failed; see the host log.")
        return wire

    def _read_body(self, request: _Handler) -> bytes:
        """The request body, read with a per-read socket timeout (the connection is blocking otherwise).

        Raises:
            _BodyTooLarge, _BadRequest (invalid framing, or the body ended early), _BodyTimeout.
        """
        request.connection.settimeout(self._body_timeout_s)
        try:
            return self._read_framed(request)
        except TimeoutError:
            raise _BodyTimeout from None
        finally:
            request.connection.settimeout(None)

    def _read_framed(self, request: _Handler) -> bytes:
        if "chunked" in request.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked(request)
        length_text = request.headers.get("Content-Length")
        if not length_text:
            return b""
        try:
            length = int(length_text)
        except ValueError:
            raise _BadRequest("Invalid Content-Length.") from None
        if length < 0:
            raise _BadRequest("Invalid Content-Length.")
        if length > self._max_body:
            raise _BodyTooLarge
        body = request.rfile.read(length)
        if len(body) < length:
            raise _BadRequest(f"The body ended after {len(body)} of {length} bytes (Content-Length).")
        return body

    def _read_chunked(self, request: _Handler) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = request.rfile.readline(1024).split(b";", 1)[0].strip()
            try:
                size = int(line, 16)
            except ValueError:
                raise _BadRequest("Invalid chunked encoding.") from None
            if size == 0:
                while request.rfile.readline(1024).strip():  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > self._max_body:
                raise _BodyTooLarge
            chunks.append(request.rfile.read(size))
            request.rfile.readline(8)  # CRLF after the chunk

    def _discard_body(self, request: _Handler) -> None:
        """A body we will not read would corrupt the next request on this connection: close it instead."""
        if request.headers.get("Content-Length", "0") not in ("", "0") or request.headers.get("Transfer-Encoding"):
            request.close_connection = True
