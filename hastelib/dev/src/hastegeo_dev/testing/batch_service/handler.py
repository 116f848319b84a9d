"""The wire side of the Batch test service: routing, shared-key check, answers and Batch error bodies."""

from __future__ import annotations

import json
import re
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

from hastegeo_dev.testing.batch_service import auth
from hastegeo_dev.testing.batch_service.engine import now_iso

if TYPE_CHECKING:
    from hastegeo_dev.testing.batch_service.server import BatchTestService

API_VERSION = "2025-06-01"
JSON_TYPE = "application/json; odata=minimalmetadata"
_ERROR_ENTITY = "Microsoft.Azure.Batch.Protocol.Entities.Container.errors/@Element"
# Matched with fullmatch: a path with a trailing newline is no route.
ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (method, re.compile(pattern), op)
    for method, pattern, op in (
        ("POST", r"/jobs", "create_job"),
        ("GET", r"/pools/(?P<pool>[^/]+)", "get_pool"),
        ("GET", r"/pools/(?P<pool>[^/]+)/nodes/(?P<node>[^/]+)", "get_node"),
        ("GET", r"/jobs", "list_jobs"),
        ("GET", r"/jobs/(?P<job>[^/]+)", "get_job"),
        ("PATCH", r"/jobs/(?P<job>[^/]+)", "update_job"),
        ("POST", r"/jobs/(?P<job>[^/]+)/terminate", "terminate_job"),
        ("POST", r"/jobs/(?P<job>[^/]+)/tasks", "create_task"),
        ("GET", r"/jobs/(?P<job>[^/]+)/tasks/(?P<task>[^/]+)", "get_task"),
        ("POST", r"/jobs/(?P<job>[^/]+)/tasks/(?P<task>[^/]+)/terminate", "terminate_task"),
        ("GET", r"/jobs/(?P<job>[^/]+)/tasks/(?P<task>[^/]+)/files", "list_task_files"),
        ("GET", r"/jobs/(?P<job>[^/]+)/tasks/(?P<task>[^/]+)/files/(?P<file>[^/]+)", "get_task_file"),
        ("HEAD", r"/jobs/(?P<job>[^/]+)/tasks/(?P<task>[^/]+)/files/(?P<file>[^/]+)", "get_task_file_properties"),
        ("DELETE", r"/jobs/(?P<job>[^/]+)/tasks/(?P<task>[^/]+)/files/(?P<file>[^/]+)", "delete_task_file"),
    )
)


class BatchError(Exception):
    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


class Answer:
    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None, raw: bytes = b"") -> None:
        self.status, self.body, self.headers, self.raw = status, body, headers or {}, raw


class Handler(BaseHTTPRequestHandler):
    owner: BatchTestService
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read counters, not logs
        return

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        service = self.owner
        raw_path, _, raw_query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        payload = self.rfile.read(length) if length else b""
        query = {k: v[0] for k, v in parse_qs(raw_query).items()}
        op, params = self._route(raw_path)
        body: Any = None
        if payload:
            try:
                body = json.loads(payload)
            except ValueError:
                body = None
        job_id = params.get("job") or (body.get("id") if op == "create_job" and isinstance(body, dict) else None)
        if job_id is not None:
            job_id = unquote(job_id)
            params["job"] = job_id
        if op:
            service.count(op, job_id)
        try:
            self._authorize(raw_path, raw_query)
            if op is None:
                raise BatchError(404, "InvalidUri", f"The requested URI does not represent any resource: {raw_path}")
            if query.get("api-version") != API_VERSION:
                raise BatchError(400, "InvalidQueryParameterValue", f"api-version must be {API_VERSION}")
            rule = service.faults.take_rule(op, job_id)
            if rule is not None and rule.delay_s:
                time.sleep(rule.delay_s)
            if rule is not None and rule.status:
                raise BatchError(rule.status, rule.code, rule.message, rule.retry_after)
            answer = service.handle(op, params, query, body, self.headers)
            if rule is not None and rule.lose_response:
                self.close_connection = True  # the work is done, the caller never hears of it
                return
            self._send(answer)
        except BatchError as exc:
            self._send_error(exc)
        except ConnectionError:  # the client left before its answer (its own timeout): nobody to answer
            self.close_connection = True
        except Exception as exc:  # a bug in the double must still answer like the service
            self._send_error(BatchError(500, "InternalError", f"Unexpected error in the test service: {exc!r}"))

    def _route(self, raw_path: str) -> tuple[str | None, dict[str, str]]:
        for method, pattern, op in ROUTES:
            match = pattern.fullmatch(raw_path)
            if match and method == self.command:
                return op, {k: unquote(v) for k, v in match.groupdict().items()}
        return None, {}

    def _authorize(self, raw_path: str, raw_query: str) -> None:
        problem = auth.check(
            self.headers.get("Authorization"),
            method=self.command,
            raw_path=raw_path,
            query=raw_query,
            headers=list(self.headers.items()),
            account_name=self.owner.account_name,
            account_key=self.owner.account_key,
        )
        if problem is not None:
            status = 401 if "missing" in problem or "not SharedKey" in problem else 403
            raise BatchError(status, "AuthenticationFailed", f"Server failed to authenticate the request: {problem}")

    def _send(self, answer: Answer) -> None:
        data = answer.raw
        headers = dict(answer.headers)
        length_override = headers.pop("Content-Length-Override", None)
        if answer.body is not None:
            data = json.dumps(answer.body).encode("utf-8")
            headers["Content-Type"] = JSON_TYPE
        self.send_response(answer.status)
        self._common_headers()
        for name, value in headers.items():
            self.send_header(name, value)
        if self.command == "HEAD":
            self.send_header("Content-Length", length_override or "0")
            self.end_headers()
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, exc: BatchError) -> None:
        request_id = str(uuid.uuid4())
        body = {
            "odata.metadata": f"{self.owner.url}/$metadata#{_ERROR_ENTITY}",
            "code": exc.code,
            "message": {"lang": "en-US", "value": f"{exc.message}\nRequestId:{request_id}\nTime:{now_iso()}"},
            "values": [{"key": "Reason", "value": exc.message}],
        }
        data = b"" if self.command == "HEAD" else json.dumps(body).encode("utf-8")
        self.send_response(exc.status)
        self._common_headers(request_id)
        if exc.retry_after is not None:
            self.send_header("Retry-After", f"{exc.retry_after:g}")
        if data:
            self.send_header("Content-Type", JSON_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _common_headers(self, request_id: str | None = None) -> None:
        self.send_header("request-id", request_id or str(uuid.uuid4()))
        self.send_header("DataServiceVersion", "3.0")
        client_request_id = self.headers.get("client-request-id")
        if client_request_id:
            self.send_header("client-request-id", client_request_id)
