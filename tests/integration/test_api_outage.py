"""A storage outage answers 503 problem+json with Retry-After within seconds, on every route that needs storage.

The API runs on its own Azurite, which is then stopped (connections refused) and replaced by a
listener that accepts connections and never answers (every read times out): the two ways
storage goes away. The handlers use the runtime's default API storage budget, as deployed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from azure.core.exceptions import ResourceExistsError
from azure.storage.queue import QueueClient

from api.openapi import openapi_document
from hastegeo.pipeline.accept import REENQUEUE_AFTER_S
from hastegeo.pipeline.reconcile import ReconcileStep
from hastegeo.runtime import API_STORAGE_BUDGET, get_runtime
from hastegeo_dev.devhost.azurite import ACCOUNT_KEY, ACCOUNT_NAME, Azurite
from hastegeo_dev.testing.fault_proxy import FaultPlan, FaultProxy
from tests.integration.test_api import VALID, call

pytestmark = [pytest.mark.azurite, pytest.mark.slow]

# One storage call, retries included, when storage never answers: what the budget allows, plus slack.
SILENT_BOUND_S = (API_STORAGE_BUDGET.retries + 1) * (
    API_STORAGE_BUDGET.connect_timeout_s + API_STORAGE_BUDGET.read_timeout_s
) + API_STORAGE_BUDGET.retries * API_STORAGE_BUDGET.backoff_s
REFUSED_BOUND_S = 3.0


class Silent:
    """A TCP listener on 127.0.0.1 that accepts connections, reads whatever comes, and never answers."""

    def __init__(self, port: int) -> None:
        self._sock = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._open.append(conn)

    def close(self) -> None:
        self._stop.set()
        for conn in self._open:
            conn.close()
        self._sock.close()


@pytest.fixture
def storage(api_settings: Callable[..., None]) -> Iterator[Azurite]:
    """An Azurite of this test's own; the API's runtime is built on it while it runs."""
    emulator = Azurite(in_memory=True).start()
    try:
        api_settings(AzureWebJobsStorage=emulator.connection_string)
        yield emulator
    finally:
        emulator.stop()


def routes(job_id: str) -> dict[str, tuple[str, str, str, dict[str, Any]]]:
    return {
        "submit": ("submit_job", "POST", "/api/jobs", {"body": {**VALID, "labels": {"outage": "yes"}}}),
        "list": ("list_jobs", "GET", "/api/jobs", {"params": {"projectId": "p1"}}),
        "get": ("get_job", "GET", f"/api/jobs/{job_id}", {"route_params": {"id": job_id}}),
        "cancel": ("cancel_job", "POST", f"/api/jobs/{job_id}/cancel", {"route_params": {"id": job_id}}),
        "retry": ("retry_job", "POST", f"/api/jobs/{job_id}/retry", {"route_params": {"id": job_id}}),
    }


ALL_ROUTES = ("submit", "list", "get", "cancel", "retry")


def assert_503_within(bound_s: float, job_id: str, names: tuple[str, ...] = ALL_ROUTES) -> None:
    for name in names:
        function, method, url, kwargs = routes(job_id)[name]
        started = time.monotonic()
        status, problem, response = call(function, method, url, **kwargs)
        took = time.monotonic() - started
        assert status == 503, (name, status, problem)
        assert response.mimetype == "application/problem+json"
        assert problem["status"] == 503
        assert int(response.headers["Retry-After"]) > 0
        assert took < bound_s, (name, took)
        # ... and the document says so: this status, with this header.
        path = "/jobs" if name in ("submit", "list") else "/jobs/{id}" + ("" if name == "get" else f"/{name}")
        documented = openapi_document()["paths"][path][method.lower()]["responses"]["503"]
        assert "Retry-After" in documented["headers"]


def test_stopped_storage_answers_503_with_retry_after_at_once(storage: Azurite) -> None:
    status, job, _ = call("submit_job", "POST", "/api/jobs", VALID)
    assert status == 202
    storage.stop()
    assert_503_within(REFUSED_BOUND_S, job["id"])


def test_storage_that_never_answers_costs_a_request_its_budget_not_minutes(storage: Azurite) -> None:
    status, job, _ = call("submit_job", "POST", "/api/jobs", VALID)
    assert status == 202
    blob_port = urlsplit(storage.blob_url).port
    queue_port = urlsplit(storage.queue_url).port
    assert blob_port is not None
    assert queue_port is not None
    storage.stop()
    silent = [Silent(blob_port), Silent(queue_port)]
    try:
        # A write and a listing (each route's calls go through the same budgeted clients).
        assert_503_within(SILENT_BOUND_S + 2, job["id"], ("submit", "list"))
    finally:
        for listener in silent:
            listener.close()


def test_a_stored_job_whose_submit_message_fails_is_accepted_and_the_reconciler_sends_it(
    storage: Azurite, api_settings: Callable[..., None]
) -> None:
    """Queue storage fails after the job was stored: 202 within the budget (not a 500, nor a 503 that
    would make a client without a key submit a second job), and the reconciler sends the message."""
    with FaultProxy(urlsplit(storage.queue_url).port or 0) as proxy:
        api_settings(
            AzureWebJobsStorage=f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={storage.blob_url};QueueEndpoint=http://127.0.0.1:{proxy.port}/{ACCOUNT_NAME};"
        )
        runtime = get_runtime()  # built (its queues made) before queue storage fails
        try:
            proxy.set_plan(FaultPlan(rate=1.0, kinds=("error",)))
            started = time.monotonic()
            status, job, _ = call("submit_job", "POST", "/api/jobs", VALID)
            took = time.monotonic() - started
            assert status == 202, job
            assert took < SILENT_BOUND_S + 2, took
            assert proxy.injected["error"] > 0
            assert runtime.api.store.get(job["id"]).state.value == "queued"
            submit_queue = QueueClient.from_connection_string(storage.connection_string, "jobs-submit")
            with contextlib.suppress(ResourceExistsError):
                submit_queue.create_queue()
            assert [m.content for m in submit_queue.peek_messages(max_messages=32) if job["id"] in m.content] == []
            proxy.set_plan(FaultPlan())
            # Once the job has been quiet for REENQUEUE_AFTER_S, the reconciler sends its message.
            later = datetime.now(UTC) + timedelta(seconds=REENQUEUE_AFTER_S + 1)
            ReconcileStep(replace(runtime.deps, clock=lambda: later)).run()
            sent = [m.content for m in submit_queue.peek_messages(max_messages=32) if job["id"] in m.content]
            assert len(sent) == 1, sent
        finally:
            proxy.set_plan(FaultPlan())
            api_settings(AzureWebJobsStorage=storage.connection_string)  # closed without the proxy ...
            get_runtime()  # ... by the fixture, after this Azurite has stopped: built while it runs
