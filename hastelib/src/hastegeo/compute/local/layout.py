"""The on-disk layout of the local backend, and the scheduler that admits queued jobs.

Standard library only: this module is imported by the per-job supervisor
process, which starts for every job and must start fast.

    <root>/
        config.json               slots and interpreter, written by the adapter
        scheduler.lock            flock held while admitting jobs
        queue/<seq>-<name>        jobs waiting for a slot (FIFO by seq)
        active/<name>             running jobs: the supervisor's pid
        exited/<name>             a job ended; the adapter nudges the pipeline
        jobs/<name>/
            spec.json             argv, env, time limit, job id
            work/                 HASTE_JOB_WORKDIR: inputs/ outputs/ logs/
            state/ready           inputs staged; the job may be admitted
            state/running.json    workload pid and start time
            state/exit.json       exit code, reason, end time (the truth)
            state/uploaded        outputs and logs are in blob storage
            state/cancel          cancellation requested
            state/launches.log    one line per supervisor started (at most one per job)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class LocalLayout:
    def __init__(self, root: Path) -> None:
        self.root = root

    def ensure(self) -> LocalLayout:
        for folder in ("queue", "active", "exited", "jobs"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        return self

    def job_dir(self, name: str) -> Path:
        return self.root / "jobs" / name

    def work(self, name: str) -> Path:
        return self.job_dir(name) / "work"

    def state(self, name: str) -> Path:
        return self.job_dir(name) / "state"

    def read_config(self) -> dict[str, Any]:
        return read_json(self.root / "config.json") or {"slots": 1, "python": sys.executable}

    def write_config(self, slots: int, python: str) -> None:
        write_json(self.root / "config.json", {"slots": slots, "python": python})

    def enqueue(self, name: str) -> None:
        (self.root / "queue" / f"{time.time_ns():020d}-{name}").touch()

    def dequeue(self, name: str) -> bool:
        """Remove a waiting job from the queue. True if it was waiting."""
        removed = False
        for entry in (self.root / "queue").glob(f"*-{name}"):
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                removed = True
        return removed

    def is_waiting(self, name: str) -> bool:
        return any((self.root / "queue").glob(f"*-{name}"))

    def active_pid(self, name: str) -> int | None:
        try:
            return int((self.root / "active" / name).read_text())
        except (FileNotFoundError, ValueError):
            return None

    def scheduler_lock(self) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.root / "scheduler.lock")

    def admit(self) -> list[str]:
        """Start supervisors for waiting jobs while slots are free. Returns the names started.

        Safe to call from any process at any time: the adapter calls it on
        submit and status, each supervisor calls it when its job ends.
        """
        config = self.read_config()
        started: list[str] = []
        with self.scheduler_lock():
            active_dir = self.root / "active"
            running = 0
            for entry in active_dir.iterdir():
                try:
                    pid = int(entry.read_text())
                except (ValueError, FileNotFoundError):
                    pid = 0
                if pid and pid_alive(pid):
                    running += 1
                else:
                    with contextlib.suppress(FileNotFoundError):
                        entry.unlink()
            free = int(config["slots"]) - running
            for entry in sorted((self.root / "queue").iterdir()):
                if free <= 0:
                    break
                name = entry.name.split("-", 1)[1]
                entry.unlink()
                if (self.state(name) / "exit.json").exists():
                    continue  # cancelled while waiting
                process = subprocess.Popen(
                    [config["python"], "-m", "hastegeo.compute.local.supervisor", str(self.root), name],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    close_fds=True,
                )
                (active_dir / name).write_text(str(process.pid))
                with (self.state(name) / "launches.log").open("a", encoding="utf-8") as launches:
                    launches.write(f"{time.time():.3f} supervisor {process.pid}\n")
                started.append(name)
                free -= 1
        return started


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``, across threads and processes."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process counts as gone.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(") ", 1)[1][:1] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return loaded if isinstance(loaded, dict) else None


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Atomic: a reader sees the old document or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temporary.write_text(json.dumps(document), encoding="utf-8")
    temporary.replace(path)
