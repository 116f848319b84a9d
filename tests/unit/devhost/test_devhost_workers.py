"""Queue worker processes get the host's wake-ups over standard input, one worker in turn."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from hastegeo_dev.devhost.workers import QueueWorkers, listen_for_wakes, worker_command

# A stand-in worker: appends each line it reads, with its pid, to the file named in argv[1].
ECHO = (
    "import os, sys\n"
    "for line in sys.stdin:\n"
    "    with open(sys.argv[1], 'a') as f:\n"
    "        f.write(f'{os.getpid()} {line.strip()}\\n')\n"
)


def test_wake_ups_go_to_each_worker_in_turn(tmp_path: Path) -> None:
    log = tmp_path / "wakes.txt"
    workers = QueueWorkers(2, [sys.executable, "-c", ECHO, str(log)])
    workers.start()
    for name in ("jobs-submit", "jobs-poll", "jobs-submit", "jobs-poll"):
        workers.wake(name)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(_lines(log)) < 4:
        time.sleep(0.05)
    workers.stop()
    lines = _lines(log)
    by_pid: dict[str, list[str]] = {}
    for pid, name in lines:
        by_pid.setdefault(pid, []).append(name)
    assert sorted(by_pid.values()) == [["jobs-poll", "jobs-poll"], ["jobs-submit", "jobs-submit"]]


def test_every_worker_but_the_first_is_a_standby(tmp_path: Path) -> None:
    log = tmp_path / "argv.txt"
    # Each stand-in worker appends its arguments after the file's name as one line.
    record = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(' '.join(sys.argv[2:]) + '\\n')\n"
    workers = QueueWorkers(3, [sys.executable, "-c", record, str(log), "--queues-only"], standby=["--rest", "10"])
    workers.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(_lines(log)) < 3:
        time.sleep(0.05)
    workers.stop()
    standby = "--queues-only --rest 10"
    assert sorted(log.read_text().splitlines()) == ["--queues-only", standby, standby]


def _lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def test_a_worker_that_has_gone_does_not_break_the_host(tmp_path: Path) -> None:
    workers = QueueWorkers(1, [sys.executable, "-c", "pass"])
    workers.start()
    workers.stop()
    workers.wake("jobs-submit")  # nothing to wake: no error
    gone = QueueWorkers(1, [sys.executable, "-c", "pass"])
    gone.start()
    gone._processes[0].wait(10)
    for _ in range(3):  # the pipe's reader has exited: the write fails quietly
        gone.wake("jobs-submit")
    gone.stop()


def test_a_worker_wakes_each_queue_it_is_told_of() -> None:
    read, write = os.pipe()
    woken: list[str] = []
    done = threading.Event()

    def wake(name: str) -> None:
        woken.append(name)
        if len(woken) == 2:
            done.set()

    with os.fdopen(read, "rb") as stream:
        thread = listen_for_wakes(stream, wake)
        os.write(write, b"jobs-submit\n\njobs-poll\n")
        os.close(write)
        assert done.wait(5)
        thread.join(5)
    assert woken == ["jobs-submit", "jobs-poll"]
    assert not thread.is_alive()


def test_workers_run_at_a_lower_priority() -> None:
    command = worker_command(["--queues-only"], niceness=5)
    assert command[:3] == [sys.executable, "-m", "hastegeo_dev.devhost"]
    assert command[-4:] == ["--niceness", "5", "--host-pid", str(os.getpid())]
