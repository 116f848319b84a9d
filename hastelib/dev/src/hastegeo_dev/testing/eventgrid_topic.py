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
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hastegeo_dev.testing.loopback import LoopbackService, answer, error, fault_body

API_VERSION = "2018-01-01"
MAX_BODY_BYTES = 1024 * 1024
REQUIRED = ("specversion", "id", "source", "type")


class EventGridTopicDouble(LoopbackService):
    def __init__(self) -> None:
        super().__init__(("POST",))
        self.events: list[dict[str, Any]] = []
        self.requests: list[dict[str, str]] = []  # method, path, query, content type, authorization

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/api/events"

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        self._post(handler)

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
        fault = self.next_fault()
        if fault is not None:
            return answer(handler, fault, fault_body(fault))
        if url.path != "/api/events":
            return answer(handler, 404, error("NotFound", f"no such path {url.path}"))
        if parse_qs(url.query).get("api-version") != [API_VERSION]:
            return answer(handler, 400, error("BadRequest", "api-version is missing or not supported"))
        if not authorization.startswith("Bearer ") or len(authorization) <= len("Bearer "):
            return answer(handler, 401, error("Unauthorized", "the request is not authorized"))
        if length > MAX_BODY_BYTES:
            return answer(handler, 413, error("RequestEntityTooLarge", "the request exceeds 1 MB"))
        if content_type.split(";")[0].strip() != "application/cloudevents-batch+json":
            refused = f"content type {content_type!r} is not a CloudEvents batch"
            return answer(handler, 400, error("BadRequest", refused))
        try:
            events = json.loads(body)
        except ValueError:
            return answer(handler, 400, error("BadRequest", "the body is not JSON"))
        problem = _check(events)
        if problem:
            return answer(handler, 400, error("BadRequest", problem))
        with self._lock:
            self.events.extend(events)
        return answer(handler, 200, b"")


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
