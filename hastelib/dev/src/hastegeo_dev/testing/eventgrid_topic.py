"""A loopback stand-in for an Event Grid custom topic's publish endpoint (CloudEvents 1.0 schema).

Held to what the service documents for ``POST https://<topic>.<region>-1.eventgrid.azure.net/api/events``:
``api-version=2018-01-01``; ``Content-Type: application/cloudevents-batch+json; charset=utf-8``; a
bearer token (Entra ID, scope ``https://eventgrid.azure.net/.default``); a JSON array of events,
each with ``specversion`` "1.0", ``id``, ``source`` and ``type``; at most 1 MB per request. It answers
200 with an empty body, 401 without a token, 400 ``{"error": {"code", "message"}}`` for a body the
service refuses, 413 for a body too large. ``fail_next`` scripts outages (503, 429).

Usage::

    with EventGridTopicDouble() as topic:
        publisher = EventGridTopic(topic.endpoint, credential)
        ...
        topic.events  # every event accepted, in order
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

API_VERSION = "2018-01-01"
MAX_BODY_BYTES = 1024 * 1024
REQUIRED = ("specversion", "id", "source", "type")


class EventGridTopicDouble:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.requests: list[dict[str, str]] = []  # method, path, query, content type, authorization
        self._faults: deque[int] = deque()
        self._lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                double._post(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/api/events"

    def fail_next(self, *statuses: int) -> None:
        """Answer the next requests with these statuses (then accept again)."""
        with self._lock:
            self._faults.extend(statuses)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length)
        content_type = handler.headers.get("Content-Type", "")
        authorization = handler.headers.get("Authorization", "")
        with self._lock:
            self.requests.append(
                {"path": url.path, "query": url.query, "contentType": content_type, "authorization": authorization}
            )
            fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            return _answer(handler, fault, _error("ServiceUnavailable" if fault >= 500 else "TooManyRequests", "fault"))
        if url.path != "/api/events":
            return _answer(handler, 404, _error("NotFound", f"no such path {url.path}"))
        if parse_qs(url.query).get("api-version") != [API_VERSION]:
            return _answer(handler, 400, _error("BadRequest", "api-version is missing or not supported"))
        if not authorization.startswith("Bearer ") or len(authorization) <= len("Bearer "):
            return _answer(handler, 401, _error("Unauthorized", "the request is not authorized"))
        if length > MAX_BODY_BYTES:
            return _answer(handler, 413, _error("RequestEntityTooLarge", "the request exceeds 1 MB"))
        if content_type.split(";")[0].strip() != "application/cloudevents-batch+json":
            refused = f"content type {content_type!r} is not a CloudEvents batch"
            return _answer(handler, 400, _error("BadRequest", refused))
        try:
            events = json.loads(body)
        except ValueError:
            return _answer(handler, 400, _error("BadRequest", "the body is not JSON"))
        problem = _check(events)
        if problem:
            return _answer(handler, 400, _error("BadRequest", problem))
        with self._lock:
            self.events.extend(events)
        return _answer(handler, 200, b"")


def _check(events: Any) -> str | None:
    if not isinstance(events, list) or not events:
        return "the body must be a non-empty JSON array of events"
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            return f"event {index} is not an object"
        missing = [name for name in REQUIRED if not isinstance(event.get(name), str) or not event[name]]
        if missing:
            return f"event {index} lacks {', '.join(missing)}"
        if event["specversion"] != "1.0":
            return f"event {index}: specversion must be 1.0"
    return None


def _error(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


def _answer(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    if body:
        handler.send_header("Content-Type", "application/json")
    handler.end_headers()
    handler.wfile.write(body)
