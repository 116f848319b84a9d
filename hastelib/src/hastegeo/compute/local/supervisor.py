"""The per-job supervisor of the local backend: ``python -m hastegeo.compute.local.supervisor ROOT NAME``.

It runs one workload in its own process group, enforces the time limit,
records the exit in ``state/exit.json`` and leaves a marker in ``exited/``
so the pipeline looks at once. It outlives the Functions host: a host that
is killed and restarted finds the job's truth on disk.

It records an exit on every path it can see: the workload ending, the time
limit, a cancellation, the workload failing to start, a signal that stops
the supervisor itself (the workload is stopped with it, since nobody would
record its end otherwise), and any exception of its own. Only SIGKILL leaves
no record; the adapter notices the supervisor is gone and records that.

Standard library only, because one starts for every job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from hastegeo.compute.local.layout import LocalLayout, read_json, write_json

KILL_GRACE_S = 5.0
_PYTHON_ALIASES = ("python", "python3")


# Signals that stop the supervisor; each is turned into a recorded exit.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(BaseException):
    """The supervisor was asked to stop by a signal (a BaseException so no ``except Exception`` eats it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def run(layout: LocalLayout, name: str) -> int:
    """Run the job and record how it ended, whatever happens on the way."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        for signum in STOP_SIGNALS:
            signal.signal(signum, _raise_stopped)
        return _run(layout, name, started)
    except BaseException as exc:  # every path ends in an exit record
        _ignore_stop_signals()  # a second signal must not interrupt the record of the first
        for process in started:
            _kill_group(process)
        if isinstance(exc, Stopped):
            reason = f"the local supervisor was stopped by {exc}; the workload was stopped with it"
        else:
            reason = f"the local supervisor failed: {type(exc).__name__}: {exc}"
        if (layout.state(name) / "exit.json").exists():  # recorded already; only the announcement failed
            with contextlib.suppress(Exception):
                _announce(layout, name)
            return 1
        return _finish(layout, name, started[0].poll() if started else None, reason)


def _run(layout: LocalLayout, name: str, started: list[subprocess.Popen[bytes]]) -> int:
    spec = read_json(layout.job_dir(name) / "spec.json") or {}
    state = layout.state(name)
    work = layout.work(name)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    argv = list(spec.get("argv") or [])
    if argv and argv[0] in _PYTHON_ALIASES:
        argv[0] = str(layout.read_config().get("python") or sys.executable)
    env = {**os.environ, **(spec.get("env") or {}), "HASTE_JOB_WORKDIR": str(work)}
    env["AZ_BATCH_TASK_WORKING_DIR"] = str(work)
    time_limit = float(spec.get("timeLimitS") or 3600)

    if (state / "cancel").exists():
        return _finish(layout, name, None, "cancelled before it started", cancelled=True)
    try:
        with (logs / "stdout.txt").open("ab") as out, (logs / "stderr.txt").open("ab") as err:
            process = subprocess.Popen(
                argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
            )
    except OSError as exc:
        return _finish(layout, name, None, f"could not start the workload: {exc.strerror or exc}")
    started.append(process)
    write_json(state / "running.json", {"pid": process.pid, "startedAt": _now()})

    reason: str | None = None
    try:
        code = process.wait(timeout=time_limit)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        code = process.wait()
        reason = f"exceeded its time limit of {time_limit:g}s and was stopped"
    cancelled = (state / "cancel").exists()
    if cancelled:
        reason = "cancelled"
    return _finish(layout, name, code, reason, cancelled=cancelled)


def _finish(layout: LocalLayout, name: str, code: int | None, reason: str | None, *, cancelled: bool = False) -> int:
    _ignore_stop_signals()  # the record is being written: a late signal must not cut it in half
    write_json(
        layout.state(name) / "exit.json",
        {"exitCode": code, "reason": reason, "cancelled": cancelled, "endedAt": _now()},
    )
    _announce(layout, name)
    return 0


def _announce(layout: LocalLayout, name: str) -> None:
    """Free the slot, leave the ``exited/`` marker for the adapter, and admit the next job."""
    with contextlib.suppress(FileNotFoundError):
        (layout.root / "active" / name).unlink()
    (layout.root / "exited" / name).touch()
    layout.admit()


def _ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m hastegeo.compute.local.supervisor ROOT NAME", file=sys.stderr)
        return 2
    return run(LocalLayout(Path(args[0])), args[1])


if __name__ == "__main__":
    sys.exit(main())
