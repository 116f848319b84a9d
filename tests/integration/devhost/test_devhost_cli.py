"""``python -m hastegeo_dev.devhost`` prints its base URL, serves the app, and exits cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from devhost_helpers import call

from hastegeo_dev.devhost.azurite import Azurite

pytestmark = pytest.mark.azurite

HERE = Path(__file__).parent


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError("the host printed nothing in time")
    return process.stdout.readline().strip()


def test_entry_point_serves_until_sigterm(azurite: Azurite, tmp_path: Path) -> None:
    host_json = tmp_path / "host.json"
    host_json.write_text(json.dumps({"version": "2.0", "extensions": {"queues": {"messageEncoding": "none"}}}))
    env = {**os.environ, "AzureWebJobsStorage": azurite.connection_string, "PYTHONUNBUFFERED": "1"}
    args = ["--app", "devhost_sample_app:app", "--app-dir", str(HERE), "--port", "0", "--host-json", str(host_json)]
    process = subprocess.Popen(
        [sys.executable, "-m", "hastegeo_dev.devhost", *args, "--cors-origin", "http://localhost:3000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        base_url = _first_line(process, timeout=20)
        assert base_url.startswith("http://127.0.0.1:")
        reply = call(base_url, "GET", "/api/hello", headers={"Origin": "http://localhost:3000"})
        assert (reply.status, reply.body) == (200, b"hello")
        assert reply.headers["access-control-allow-origin"] == "http://localhost:3000"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stdout is not None
        process.stdout.close()


def test_entry_point_reports_a_bad_app(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hastegeo_dev.devhost", "--app", "no_such_module_xyz:app", "--app-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "cannot import" in result.stderr
