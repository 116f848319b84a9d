"""``python -m hastegeo_dev.devhost`` prints its base URL, serves the app, and exits cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from devhost_helpers import call

from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.devhost.workers import WORKER_NICENESS

pytestmark = pytest.mark.azurite

HERE = Path(__file__).parent
AUTOGROUP = Path("/proc/self/autogroup").exists()


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError("the host printed nothing in time")
    return process.stdout.readline().strip()


def _start_host(azurite: Azurite, tmp_path: Path, queues: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    """The development host on the sample app, printing its base URL first."""
    host_json = tmp_path / "host.json"
    host_json.write_text(json.dumps({"version": "2.0", "extensions": {"queues": queues}}))
    env = {**os.environ, "AzureWebJobsStorage": azurite.connection_string, "PYTHONUNBUFFERED": "1"}
    args = ["--app", "devhost_sample_app:app", "--app-dir", str(HERE), "--port", "0", "--host-json", str(host_json)]
    return subprocess.Popen(
        [sys.executable, "-m", "hastegeo_dev.devhost", *args, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    assert process.stdout is not None
    process.stdout.close()


def test_entry_point_serves_until_sigterm(azurite: Azurite, tmp_path: Path) -> None:
    process = _start_host(azurite, tmp_path, {"messageEncoding": "none"}, "--cors-origin", "http://localhost:3000")
    try:
        base_url = _first_line(process, timeout=20)
        assert base_url.startswith("http://127.0.0.1:")
        reply = call(base_url, "GET", "/api/hello", headers={"Origin": "http://localhost:3000"})
        assert (reply.status, reply.body) == (200, b"hello")
        assert reply.headers["access-control-allow-origin"] == "http://localhost:3000"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        _stop(process)


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


def test_worker_processes_die_with_a_killed_host(azurite: Azurite, tmp_path: Path) -> None:
    """In sessions of their own, out of the host's process group, the workers still end with it."""
    process = _start_host(azurite, tmp_path, {"messageEncoding": "none"}, "--worker-processes", "2")
    try:
        _first_line(process, timeout=30)
        workers = psutil.Process(process.pid).children()
        assert len(workers) == 2
        deadline = time.monotonic() + 20  # settled in their own sessions: only the kernel's signal can end them
        while not all(os.getsid(worker.pid) == worker.pid for worker in workers):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.kill()
        process.wait()
        _gone, alive = psutil.wait_procs(workers, timeout=10)
        assert alive == []
    finally:
        _stop(process)


def test_worker_processes_run_the_queues_apart_from_http(azurite: Azurite, tmp_path: Path) -> None:
    """With several worker processes, this process serves HTTP and the workers (niced) run the queue
    triggers; a message an HTTP function sends is consumed by one of them."""
    queues = {"messageEncoding": "none", "maxPollingInterval": "00:00:02"}
    process = _start_host(azurite, tmp_path, queues, "--worker-processes", "2")
    evidence = tmp_path / "consumed.json"
    try:
        base_url = _first_line(process, timeout=30)
        workers = psutil.Process(process.pid).children()
        assert len(workers) == 2
        # One listens as the platform does; the other is a standby whose idle queues rest longer (ADR 0054).
        assert sorted("--rest-polling-s" in worker.cmdline() for worker in workers) == [False, True]
        body = json.dumps({"key": "split", "touch": str(evidence)}).encode()
        assert call(base_url, "POST", "/api/enqueue", body=body).status == 202
        deadline = time.monotonic() + 30
        while not evidence.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.2)  # the file is complete once written and closed
        ran = json.loads(evidence.read_text())
        assert ran["pid"] in {worker.pid for worker in workers}
        assert ran["niceness"] == max(os.nice(0), WORKER_NICENESS)
        for worker in workers:  # a session (so an autogroup) of its own, at its own priority
            assert os.getsid(worker.pid) == worker.pid != os.getsid(process.pid)
            if AUTOGROUP:
                assert Path(f"/proc/{worker.pid}/autogroup").read_text().split()[-1] == str(ran["niceness"])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    finally:
        _stop(process)
