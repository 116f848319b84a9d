"""Retries on Retry-After and the error translator, against a loopback server that answers as told."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from hastegeo.cli.client import ApiClient, ApiError, NotTheApi, retry_after_s
from hastegeo.cli.download import Progress, target_path
from hastegeo.cli.exits import ExitCode, Failure, explain


class Scripted(BaseHTTPRequestHandler):
    """Answers each request with the next (status, headers, body) of ``script``."""

    script: ClassVar[list[tuple[int, dict[str, str], bytes]]] = []
    seen: ClassVar[list[dict[str, str]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        type(self).seen.append(dict(self.headers.items()))
        status, headers, body = type(self).script.pop(0)
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[str]:
    Scripted.script, Scripted.seen = [], []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def problem(status: int, retry_after: str | None = None, **body: object) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/problem+json", **({"Retry-After": retry_after} if retry_after else {})}
    return status, headers, json.dumps({"status": status, **body}).encode()


OK = (200, {"Content-Type": "application/json"}, b'{"id": "j1", "state": "queued"}')


def test_429_and_503_are_sent_again_after_their_retry_after(scripted: str) -> None:
    Scripted.script = [problem(429, "2", title="Too many"), problem(503, "1", title="Storage"), OK]
    slept: list[float] = []
    client = ApiClient(scripted, sleep=slept.append)
    assert client.submit({"workload": "artifacts"}, idempotency_key="k1")["id"] == "j1"
    assert slept == [2.0, 1.0]
    assert {seen["Idempotency-Key"] for seen in Scripted.seen} == {"k1"}  # the same submission each time


def test_the_budget_ends_the_retries_and_the_error_says_how_many(scripted: str) -> None:
    Scripted.script = [problem(503, "4", title="Storage is unavailable")] * 3
    slept: list[float] = []
    with pytest.raises(ApiError) as caught:
        ApiClient(scripted, sleep=slept.append, retry_budget_s=9).get("j1")
    assert slept == [4.0, 4.0]
    assert (caught.value.attempts, caught.value.waited) == (3, 8.0)
    failure = explain(caught.value, scripted)
    assert failure is not None
    assert failure.code == ExitCode.UNAVAILABLE
    assert failure.message == "Storage is unavailable (HTTP 503); still so after 3 tries over 8s, try again later"


@pytest.mark.parametrize(
    ("status", "retry_after"), [(400, "1"), (404, "1"), (409, "1"), (500, "1"), (503, None), (429, None)]
)
def test_other_statuses_and_a_missing_retry_after_are_not_retried(
    scripted: str, status: int, retry_after: str | None
) -> None:
    Scripted.script = [problem(status, retry_after, title="No"), OK]
    with pytest.raises(ApiError) as caught:
        ApiClient(scripted, sleep=pytest.fail).get("j1")
    assert caught.value.status == status


def test_retry_after_as_seconds_or_a_date() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_s("7") == 7.0
    assert retry_after_s(format_datetime(now + timedelta(seconds=30), usegmt=True), now.timestamp()) == 30.0
    assert retry_after_s("soon") is None
    assert retry_after_s(None) is None


def test_a_body_that_is_not_the_apis(scripted: str) -> None:
    Scripted.script = [(200, {"Content-Type": "text/html"}, b"<html>a login page</html>")]
    with pytest.raises(NotTheApi) as caught:
        ApiClient(scripted).get("j1")
    failure = explain(caught.value, scripted)
    assert failure is not None
    assert failure.code == ExitCode.UNAVAILABLE
    assert "is --url right?" in failure.message


def test_field_errors_are_shown_one_per_field() -> None:
    errors = [{"field": "workload", "message": "unknown"}, {"field": "parameters.bands", "message": "not a list"}]
    failure = explain(ApiError(400, {"title": "Invalid job request", "errors": errors}), "http://x")
    assert failure == Failure(
        ExitCode.REFUSED, "Invalid job request (HTTP 400)", ["workload: unknown", "parameters.bands: not a list"]
    )


def test_a_failed_sign_in_says_to_sign_in() -> None:
    from azure.identity import CredentialUnavailableError

    failure = explain(CredentialUnavailableError("Please run 'az login' to set up an account"), "http://x")
    assert failure is not None
    assert failure.code == ExitCode.REFUSED
    assert failure.message == "could not sign in: Please run 'az login' to set up an account"


def test_a_bug_is_not_explained_away() -> None:
    assert explain(KeyError("id"), "http://x") is None
    assert explain(ZeroDivisionError(), "http://x") is None


@pytest.mark.parametrize("name", ["../escape", "/etc/passwd", "outputs/../../x", "a\\b", ""])
def test_an_output_name_cannot_leave_the_download_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(Failure):
        target_path(tmp_path, name)
    assert target_path(tmp_path, "outputs/a/b.tif") == tmp_path / "outputs" / "a" / "b.tif"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_draws_on_a_terminal_only() -> None:
    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = Progress(stream)
        progress.update("outputs/artifacts.zip", 1_500_000, 3_000_000)
        progress.update("outputs/artifacts.zip", 3_000_000, 3_000_000)
        progress.done()
    assert pipe.getvalue() == ""
    drawn = terminal.getvalue().split("\r")[1:]
    assert drawn[0].startswith("outputs/artifacts.zip")
    assert "[##########          ]  50%" in drawn[0]
    assert drawn[1].rstrip("\n").endswith("100%      3.0/3.0 MB")


def test_a_reader_that_left_is_told_apart_from_a_broken_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    from hastegeo.cli.main import stdout_gone

    read, write = os.pipe()
    with os.fdopen(write, "w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        assert not stdout_gone()  # the reader is still there
        os.close(read)
        assert stdout_gone()
        monkeypatch.undo()
        with contextlib.suppress(BrokenPipeError):
            stream.close()
