"""The on-disk layout of the local backend, and the admission that starts queued jobs.

Standard library only: every job's process (:mod:`.run`) imports it, and must start fast.

    <root>/
        scheduler.lock            flock held while admitting jobs
        queue/<seq>-<name>        jobs waiting for a slot; holds the job's project (projects take turns)
        active/<name>             running jobs: the workload's pid (leader of its own session)
        jobs/<name>/
            spec.json             argv, env, time limit, job id
            work/                 HASTE_JOB_WORKDIR: inputs/ outputs/ logs/
            state/ready           inputs staged; the job may be admitted
            state/running.json    workload pid and start time
            state/exit.json       exit code, reason, end time (the truth)
            state/uploaded        outputs and logs are in blob storage
            state/cancel          cancellation requested
            state/launches.log    one line per workload started (at most one per job)
            state/project         the job's project (admission counts running jobs per project)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from hastegeo.checkpoints.layout import CHECKPOINTS
from hastegeo.checkpoints.layout import DIR_VARIABLE as CHECKPOINT_DIR_VARIABLE
from hastegeo.compute.context import utc_now
from hastegeo.utils.files import read_json, write_json
from hastegeo.utils.turns import admission_order
from hastegeo.workdir import workdir_env

DEFAULT_TIME_LIMIT_S = 3600.0
UNRECORDED = (
    "the workload ended while no host was watching it (a SIGKILL, or a command that is not Python), "
    "so its exit was not recorded"
)
NOT_STARTED = "the local host stopped while starting the workload, so it may not have run"


# The workload's end of a pipe (its fd number), on which it says its exit record is written (:mod:`.run`).
NOTICE_VARIABLE = "HASTE_EXIT_NOTICE_FD"
NOTICE = b"!"
PROJECTS_KEPT = 10_000  # names whose project a layout remembers before it starts over


class Launched(NamedTuple):
    """A workload admission started: the host that started it reaps it."""

    name: str
    process: subprocess.Popen[bytes]
    # The host's end of the pipe the workload says "recorded" on (:data:`NOTICE`), or None without one.
    notice: int | None


class LocalLayout:
    def __init__(self, root: Path, launch_env: dict[str, str] | None = None) -> None:
        self.root = root
        # Given to every workload's process beside the spec's env, never stored: the storage access
        # its checkpoint copies use (hastegeo/checkpoints/access.py).
        self._launch_env = dict(launch_env or {})
        # A job's project never changes once queued, and admission asks for every waiting
        # job's on each pass: remembered, a burst of n queued jobs costs n reads, not n².
        self._projects: dict[str, str] = {}

    def ensure(self) -> LocalLayout:
        for folder in ("queue", "active", "jobs"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        return self

    def job_dir(self, name: str) -> Path:
        return self.root / "jobs" / name

    def work(self, name: str) -> Path:
        return self.job_dir(name) / "work"

    def state(self, name: str) -> Path:
        return self.job_dir(name) / "state"

    def join_queue(self, name: str, project: str = "") -> None:
        """Queue a staged job, its project and its entry in one step as admission sees them."""
        with self.scheduler_lock():
            self.enqueue(name, project)

    def enqueue(self, name: str, project: str = "") -> None:
        """Write the job's project, then its queue entry (the caller holds the scheduler's lock)."""
        (self.state(name) / "project").write_text(project, encoding="utf-8")
        (self.root / "queue" / f"{time.time_ns():020d}-{name}").write_text(project, encoding="utf-8")

    def requeue_lost(self, name: str, project: str) -> bool:
        """Queue again a staged job that is neither waiting, started nor ended. True if it was lost.

        ``state/ready`` is written before the queue entry: a host stopped between the two leaves a
        job nothing would ever start. The caller holds the job's submit lock, so no submit of the
        same job queues it at the same time; the scheduler's lock keeps admission out meanwhile.
        """
        with self.scheduler_lock():
            if self.is_waiting(name) or (self.root / "active" / name).exists():
                return False
            if (self.state(name) / "exit.json").exists() or not (self.state(name) / "ready").exists():
                return False
            self.enqueue(name, project)
            return True

    def project_of(self, name: str) -> str:
        if (known := self._projects.get(name)) is not None:
            return known
        try:
            project = (self.state(name) / "project").read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""  # not queued yet (or never): asked again next time
        if len(self._projects) >= PROJECTS_KEPT:
            self._projects.clear()
        self._projects[name] = project
        return project

    def running_per_project(self) -> Counter[str]:
        """Jobs holding a slot, per project (an active entry counts until admission clears it)."""
        return Counter(self.project_of(entry.name) for entry in (self.root / "active").iterdir())

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

    def record_exit(self, name: str, code: int | None, reason: str | None, **extra: str) -> dict[str, Any]:
        """Write the job's exit record (atomically) and return it; ``extra``: ``stage``, ``endedAt``.

        A job being cancelled ended because the user asked: that is its reason, however it ended.
        """
        cancelled = (self.state(name) / "cancel").exists()
        ended = {"exitCode": code, "reason": "cancelled" if cancelled else reason, "cancelled": cancelled}
        write_json(self.state(name) / "exit.json", {**ended, "endedAt": utc_now().isoformat(), **extra})
        return ended

    def admit(self, slots: int, python: str, project_limit: int = 0) -> list[Launched]:
        """Start the workloads of waiting jobs while fewer than ``slots`` run. Returns what it started.

        Projects take turns (:func:`hastegeo.utils.turns.admission_order`), and a project
        with ``project_limit`` jobs running (0: no limit) waits.

        Only hosts call it (on submit, on status, when a workload they started ended):
        each workload is a child of the host process that admitted it, which reaps it
        and records its end if the workload could not. A workload that is gone without
        a record had no host left to reap it: its end is recorded here, as not recorded.
        A job moves from ``queue/`` to ``active/`` in one rename, so one that a killed
        host was starting is never lost nor started twice.
        """
        started: list[Launched] = []
        with self.scheduler_lock():
            free = slots
            for entry in (self.root / "active").iterdir():
                pid = entry.read_text()
                if pid.isdigit() and pid_alive(int(pid)):
                    free -= 1
                    continue
                if not (self.state(entry.name) / "exit.json").exists():  # no host was left to reap it
                    self.record_exit(entry.name, None, UNRECORDED if pid else NOT_STARTED)
                entry.unlink()
            entries = {entry.name.split("-", 1)[1]: entry for entry in sorted((self.root / "queue").iterdir())}
            waiting = [(name, self.project_of(name)) for name in entries]
            for name in admission_order(waiting, self.running_per_project(), free, project_limit):
                slot = entries[name].rename(self.root / "active" / name)
                if (self.state(name) / "cancel").exists():  # cancelled while its inputs were being staged
                    self.record_exit(name, None, "cancelled")
                    slot.unlink()
                    continue
                try:
                    process, notice = self._launch(name, python)
                except OSError as exc:
                    self.record_exit(name, None, f"could not start the workload: {exc.strerror or exc}")
                    slot.unlink()
                    continue
                slot.write_text(str(process.pid))
                write_json(self.state(name) / "running.json", {"pid": process.pid, "startedAt": utc_now().isoformat()})
                with (self.state(name) / "launches.log").open("a", encoding="utf-8") as launches:
                    launches.write(f"{time.time():.3f} workload {process.pid}\n")
                started.append(Launched(name, process, notice))
        return started

    def _launch(self, name: str, python: str) -> tuple[subprocess.Popen[bytes], int | None]:
        """Start :mod:`.run` for the job in its working directory and a session of its own, with the write
        end of a pipe it says "recorded" on; returns the process and the read end (closed on failure)."""
        spec = read_json(self.job_dir(name) / "spec.json") or {}
        work = self.work(name)
        env = {**os.environ, **(spec.get("env") or {}), **workdir_env(str(work)), **self._launch_env}
        env[CHECKPOINT_DIR_VARIABLE] = str(work / CHECKPOINTS)
        (work / "logs").mkdir(parents=True, exist_ok=True)
        notice, told = os.pipe()
        env[NOTICE_VARIABLE] = str(told)
        try:
            with (work / "logs" / "stdout.txt").open("ab") as out, (work / "logs" / "stderr.txt").open("ab") as err:
                process = subprocess.Popen(
                    [python, "-m", "hastegeo.compute.local_node.run", str(self.root), name],
                    cwd=work,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                    pass_fds=(told,),
                )
        except BaseException:
            os.close(notice)
            raise
        finally:
            os.close(told)  # the workload's alone now: its end closes the pipe
        return process, notice


def time_limit_reason(spec: dict[str, Any]) -> str:
    return f"exceeded its time limit of {time_limit_s(spec):g}s and was stopped"


def time_limit_s(spec: dict[str, Any]) -> float:
    return float(spec.get("timeLimitS") or DEFAULT_TIME_LIMIT_S)


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
    """True while the process exists, a zombie included: its parent reaps it after recording its end."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
