"""What the loopback service doubles share: an HTTP server on 127.0.0.1 (a port the OS picks) in a
daemon thread, scripted faults, and JSON answers. A double subclasses :class:`LoopbackService`, names
the methods it serves and answers in :meth:`~LoopbackService.serve`."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LoopbackService:
    """Serves ``methods`` (e.g. ``("GET",)``) on 127.0.0.1 between ``__enter__`` and ``__exit__``."""

    def __init__(self, methods: tuple[str, ...]) -> None:
        self._faults: deque[int] = deque()
        self._lock = threading.Lock()
        service = self
        handlers = {f"do_{method}": lambda handler: service.serve(handler) for method in methods}
        quiet = {"log_message": lambda handler, format, *args: None}
        handler_class = type("Handler", (BaseHTTPRequestHandler,), {**handlers, **quiet})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler_class)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def fail_next(self, *statuses: int) -> None:
        """Answer the next requests with these statuses (then answer again)."""
        with self._lock:
            self._faults.extend(statuses)

    def next_fault(self) -> int | None:
        """The status scripted for this request, if any (taken from the script)."""
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def error(code: str, message: str) -> bytes:
    """The ``{"error": {"code", "message"}}`` body Azure services answer errors with."""
    return json.dumps({"error": {"code": code, "message": message}}).encode()


def fault_body(status: int) -> bytes:
    return error("ServiceUnavailable" if status >= 500 else "TooManyRequests", "fault")


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    """``status`` with ``body`` (JSON when not empty)."""
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    if body:
        handler.send_header("Content-Type", "application/json; charset=utf-8")
    handler.end_headers()
    handler.wfile.write(body)


def answer_json(handler: BaseHTTPRequestHandler, status: int, document: Any) -> None:
    answer(handler, status, json.dumps(document).encode())
