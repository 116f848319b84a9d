"""A tiny FunctionApp for the development host's tests: every trigger kind and failure mode it must handle.

``build_app(prefix)`` makes a fresh app whose queues are named after ``prefix``
(tests share one Azurite), with a ``Recorder`` that the functions report to.
The module-level ``app`` is what ``python -m hastegeo_dev.devhost --app
devhost_sample_app:app`` loads.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import azure.functions as func


@dataclass
class Call:
    function: str
    key: str
    dequeue_count: int
    body: bytes
    at: float
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Recorder:
    """What the sample functions saw, plus the peak number of concurrent queue invocations."""

    calls: list[Call] = field(default_factory=list)
    running: int = 0
    peak: int = 0
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def record(self, call: Call) -> None:
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()

    def enter(self) -> None:
        with self._cond:
            self.running += 1
            self.peak = max(self.peak, self.running)

    def leave(self) -> None:
        with self._cond:
            self.running -= 1
            self._cond.notify_all()

    def of(self, key: str) -> list[Call]:
        with self._cond:
            return [c for c in self.calls if c.key == key]

    def wait_for(self, predicate: Callable[[Recorder], bool], timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout=timeout)


def _json(value: Any, status: int = 200) -> func.HttpResponse:
    return func.HttpResponse(json.dumps(value), status_code=status, mimetype="application/json")


def build_app(prefix: str) -> tuple[func.FunctionApp, Recorder]:
    recorder = Recorder()
    app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)
    work_queue, out_queue = f"{prefix}-work", f"{prefix}-out"

    @app.route(route="hello", methods=["GET"])
    def hello(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("hello", headers={"X-Sample": "1"})

    @app.route(route="items/{id}", methods=["GET", "POST"])
    def item(req: func.HttpRequest) -> func.HttpResponse:
        return _json(
            {
                "route": dict(req.route_params),
                "params": dict(req.params),
                "method": req.method,
                "url": req.url,
                "header": req.headers.get("x-test"),
                "body": req.get_body().decode(),
            },
            status=201 if req.method == "POST" else 200,
        )

    @app.route(route="items/special", methods=["GET"])
    def special(req: func.HttpRequest) -> func.HttpResponse:
        return _json({"special": True})

    @app.route(route="files/{*path}", methods=["GET"])
    def files(req: func.HttpRequest) -> func.HttpResponse:
        return _json({"path": req.route_params.get("path")})

    @app.route(route="boom", methods=["GET"])
    def boom(req: func.HttpRequest) -> func.HttpResponse:
        raise RuntimeError("internal detail that must not leak")

    @app.route(route="size", methods=["POST"])
    def size(req: func.HttpRequest) -> func.HttpResponse:
        return _json({"bytes": len(req.get_body())})

    @app.route(route="async", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
    async def async_handler(req: func.HttpRequest) -> func.HttpResponse:
        await asyncio.sleep(0)
        return func.HttpResponse("async ok")

    @app.route(route="ctx", methods=["GET"])
    def ctx(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
        return _json({"function": context.function_name, "invocation": context.invocation_id})

    @app.route(route="enqueue", methods=["POST"])
    @app.queue_output(arg_name="out", queue_name=out_queue, connection="AzureWebJobsStorage")
    def enqueue(req: func.HttpRequest, out: func.Out[str]) -> func.HttpResponse:
        out.set(req.get_body().decode())
        return func.HttpResponse(status_code=202)

    @app.queue_trigger(arg_name="msg", queue_name=work_queue, connection="AzureWebJobsStorage")
    def work(msg: func.QueueMessage) -> None:
        payload = json.loads(msg.get_body())
        recorder.enter()
        try:
            meta = {
                "id": msg.id,
                "pop_receipt": msg.pop_receipt,
                "insertion_time": msg.insertion_time,
                "expiration_time": msg.expiration_time,
            }
            recorder.record(
                Call("work", payload["key"], msg.dequeue_count or 0, msg.get_body(), time.monotonic(), meta)
            )
            time.sleep(float(payload.get("sleep", 0)))
            if payload.get("fail"):
                raise RuntimeError(f"asked to fail: {payload['key']}")
        finally:
            recorder.leave()

    @app.queue_trigger(arg_name="msg", queue_name=out_queue, connection="AzureWebJobsStorage")
    def out_consumer(msg: func.QueueMessage) -> None:
        payload = json.loads(msg.get_body())
        recorder.record(Call("out", payload["key"], msg.dequeue_count or 0, msg.get_body(), time.monotonic()))
        if payload.get("touch"):  # say, to a test in another process, which process ran this and how nice it was
            with open(payload["touch"], "w", encoding="utf-8") as evidence:
                json.dump({"pid": os.getpid(), "niceness": os.nice(0)}, evidence)

    return app, recorder


app, recorder = build_app("devhost-sample")
