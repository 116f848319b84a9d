"""``GET /api/backends`` shows each backend's queue: jobs waiting for compute, the oldest wait, the last reason,
and whether ``auto`` sends jobs there; the reconciler's pass writes it from the documents it reads anyway."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import get_runtime
from hastegeo.store.queues import JobMessage
from tests.integration.test_api import call
from tests.support.processors import ScriptProcessor

from .conftest import request

pytestmark = pytest.mark.azurite


def test_backends_show_their_queue(api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_LOCAL_SLOTS="1")
    runtime = get_runtime()
    runtime.deps.processors["artifacts"] = ScriptProcessor()
    _, before, _ = call("list_backends", "GET", "/api/backends")
    assert before["backends"][0]["capacity"] == {
        "waiting": 0, "oldestWaitS": None, "lastReason": None, "lastReasonAt": None
    }  # fmt: skip
    blocker = runtime.acceptor.accept(parse_request(request(inputs=[], parameters={"sleep": 30}))).job
    waiting = runtime.acceptor.accept(parse_request(request(inputs=[]))).job
    for job in (blocker, waiting):
        runtime.submit.handle(JobMessage(job_id=job.id, kind="submit"))
    runtime.poll.handle(JobMessage(job_id=waiting.id, kind="nudge"))
    assert runtime.store.get(waiting.id).waiting_for_compute == "the 1 local slot is busy"
    runtime.reconcile.run()
    status, listing, _ = call("list_backends", "GET", "/api/backends")
    assert status == 200
    local = {b["name"]: b for b in listing["backends"]}["local"]
    assert local["autoRoutes"] is True
    assert local["capacity"]["waiting"] == 1
    assert local["capacity"]["oldestWaitS"] >= 0
    assert local["capacity"]["lastReason"] == "the 1 local slot is busy"
    for job in (blocker, waiting):
        runtime.cancel.cancel(job.id)
    runtime.reconcile.run()
    _, after, _ = call("list_backends", "GET", "/api/backends")
    queue = {b["name"]: b for b in after["backends"]}["local"]["capacity"]
    assert queue["waiting"] == 0
    assert queue["lastReason"] == "the 1 local slot is busy"  # the last reason stays on view after the wait
