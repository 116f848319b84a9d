"""Discovering a FunctionApp's triggers and calling handlers the way the Python worker does."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import azure.functions as func
import pytest

from hastegeo_dev.devhost.functions import DevHostError, OutValue, QueueOutput, discover, invoke, load_app


def _app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
    bp = func.Blueprint()  # type: ignore[no-untyped-call]

    @bp.route(route="jobs/{id}", methods=["GET", "post"], auth_level=func.AuthLevel.FUNCTION)
    def get_job(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("x")

    @bp.queue_trigger(arg_name="msg", queue_name="jobs-submit", connection="Storage")
    @bp.queue_output(arg_name="out", queue_name="jobs-poll", connection="Storage")
    def submit(msg: func.QueueMessage, out: func.Out[str]) -> None:
        pass

    @app.route()
    def ping(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("x")

    @app.timer_trigger(schedule="0 */5 * * * *", arg_name="timer")
    def tick(timer: func.TimerRequest) -> None:
        pass

    @app.blob_trigger(arg_name="blob", path="inputs/{name}", connection="Storage")
    def on_blob(blob: func.InputStream) -> None:
        pass

    app.register_functions(bp)
    return app


def test_discover_reads_http_queue_and_timer_triggers_and_skips_others(caplog: pytest.LogCaptureFixture) -> None:
    found = discover(_app())
    by_name = {f.name: f for f in found.http}
    assert set(by_name) == {"get_job", "ping"}
    assert by_name["get_job"].route == "jobs/{id}"
    assert by_name["get_job"].methods == ("GET", "POST")
    assert by_name["get_job"].auth_level == "function"
    assert by_name["ping"].route == "ping"  # the route defaults to the function name
    assert by_name["ping"].methods is None
    assert by_name["ping"].auth_level == "anonymous"
    (queue,) = found.queues
    assert (queue.name, queue.queue_name, queue.connection, queue.arg_name) == (
        "submit",
        "jobs-submit",
        "Storage",
        "msg",
    )
    assert queue.outputs == (QueueOutput("out", "jobs-poll", "Storage"),)
    (timer,) = found.timers
    assert (timer.name, timer.schedule, timer.arg_name) == ("tick", "0 */5 * * * *", "timer")
    assert "blobTrigger" in caplog.text


def test_invoke_passes_the_trigger_context_and_outputs() -> None:
    seen: dict[str, Any] = {}

    def handler(req: str, out: func.Out[str], context: func.Context) -> str:
        seen["context"] = context
        out.set("sent")
        return req.upper()

    out = OutValue()
    assert invoke(handler, "fn", "req", "abc", {"out": out}) == "ABC"
    assert out.was_set
    assert out.get() == "sent"
    assert seen["context"].function_name == "fn"
    assert seen["context"].invocation_id


def test_invoke_runs_async_handlers_to_completion() -> None:
    async def handler(req: int) -> int:
        return req + 1

    assert invoke(handler, "fn", "req", 1, {}) == 2


def test_load_app_by_module_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "devhost_loader_probe.py").write_text(
        "import azure.functions as func\nmyapp = func.FunctionApp()\nnot_an_app = 3\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    app = load_app("devhost_loader_probe:myapp", app_dir=tmp_path)
    assert isinstance(app, func.FunctionApp)
    with pytest.raises(DevHostError, match=r"not an azure\.functions\.FunctionApp"):
        load_app("devhost_loader_probe:not_an_app")
    with pytest.raises(DevHostError, match="cannot import"):
        load_app("devhost_no_such_module:app")
