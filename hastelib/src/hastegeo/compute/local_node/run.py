"""A local job's one process: ``python -m hastegeo.compute.local_node.run ROOT NAME``.

Admission starts it in the job's working directory and a session of its own, and it
becomes the workload (ADR 0015): a ``python -m MODULE``, ``python -c CODE`` or
``python SCRIPT`` command runs in this same interpreter, with ``sys.argv`` as Python
would set it; any other command replaces it (``exec``). Either way the job costs one
process, where a supervisor and a workload cost two.

A Python command outlives a killed host and records its own end in ``state/exit.json``
on every path it can see: it returns, calls ``sys.exit`` or raises (the code Python
exits with, written after its threads and its ``atexit`` hooks); SIGTERM (a
cancellation signals the whole group), SIGINT or SIGHUP; its time limit (an interval
timer: SIGALRM). After a signal it stops the rest of its process group too, so nothing
it started outlives the record. What leaves no record (SIGKILL, the OOM killer,
``os._exit``, and every end of a command that is not Python, which keeps the timer
across ``exec`` and dies of SIGALRM at its limit) is recorded by the host that reaps
the process, or reported by the next host as not recorded.

Once the record is written it says so on a pipe the host gave it (``HASTE_EXIT_NOTICE_FD``),
so the host handles the end while this interpreter is still shutting down (tens of
milliseconds at a lower priority): the record is the end, as it is for any status call
that reads it first. The pipe is not inherited by anything the command starts.

It runs below the host's CPU priority (``niceness`` in its spec, from
``HASTE_LOCAL_NICENESS``), its session's autogroup included: a busy machine answers
the API and runs the pipeline's steps before it runs workloads.

Standard library only: one starts for every job.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import runpy
import signal
import sys
import traceback
import types
from pathlib import Path
from typing import Any

from hastegeo.compute.local_node.layout import NOTICE, NOTICE_VARIABLE, LocalLayout, time_limit_reason, time_limit_s
from hastegeo.utils.files import read_json
from hastegeo.utils.priority import lower_priority

PYTHON_ALIASES = ("python", "python3")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Ending:
    """Writes the job's exit record once, from whichever path gets there first."""

    def __init__(self, layout: LocalLayout, name: str) -> None:
        self.layout, self.name = layout, name
        self.spec: dict[str, Any] = {}
        self.pid = os.getpid()
        self.code = 1
        self.recorded = False
        self.notice = take_notice_fd()

    def at_exit(self) -> None:
        if os.getpid() == self.pid:  # not in a child the command forked
            self.record(self.code, None)

    def on_signal(self, signum: int, frame: object) -> None:
        if os.getpid() != self.pid:  # a child the command forked: end as it would have without us
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self.recorded:
            return
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(0, signal.SIGTERM)  # the rest of the group: the command's own children
        if signum == signal.SIGALRM:
            self.record(None, time_limit_reason(self.spec))
        else:
            self.record(-signum, f"the workload was stopped by {signal.Signals(signum).name}")
        os.killpg(0, signal.SIGKILL)

    def record(self, code: int | None, reason: str | None) -> None:
        for signum in (*STOP_SIGNALS, signal.SIGALRM):  # a late signal must not cut the record in half
            signal.signal(signum, signal.SIG_IGN)
        if self.recorded:
            return
        self.recorded = True
        for stream in (sys.stdout, sys.stderr):  # the logs are complete before anyone acts on the record
            with contextlib.suppress(Exception):
                stream.flush()
        self.layout.record_exit(self.name, code, reason)
        if self.notice is not None:  # the host may go on now; without it, it goes on when we are gone
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a host gone meanwhile is an error here, not our end
            notice, self.notice = self.notice, None
            with contextlib.suppress(OSError):
                try:
                    os.write(notice, NOTICE)
                finally:
                    os.close(notice)


def take_notice_fd() -> int | None:
    """The pipe the host reads our "recorded" on, kept from everything the command starts; None without one."""
    raw = os.environ.pop(NOTICE_VARIABLE, "")
    if not raw.isdigit():
        return None
    fd = int(raw)
    try:
        os.set_inheritable(fd, False)
    except OSError:  # not open: started by hand with the variable set
        return None
    return fd


def run(argv: list[str]) -> None:
    """Become ``argv``: a Python command in this interpreter, any other by ``exec``."""
    command, args = argv[0], argv[1:]
    python = command in PYTHON_ALIASES or command == sys.executable
    if python and args[:1] == ["-m"]:
        sys.argv = args[1:]  # run_module puts the module's path in argv[0], as ``-m`` does
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif python and args[:1] == ["-c"]:
        sys.argv = ["-c", *args[2:]]
        sys.modules["__main__"] = main = types.ModuleType("__main__")
        exec(compile(args[1], "<string>", "exec"), main.__dict__)  # noqa: S102 - the job's own command
    elif python and args and not args[0].startswith("-"):
        sys.argv = args
        sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
    else:  # interpreter options, or not Python: the host that reaps it records its end
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the timer, kept across exec, ends it at its limit
        executable = sys.executable if python else command
        try:
            os.execvp(executable, [executable, *args])  # noqa: S606 - the job's own argv, no shell
        except OSError as exc:
            raise SystemExit(f"could not start the workload: {exc.strerror or exc}: {executable}") from exc


def exit_code(exc: SystemExit) -> int:
    """The status Python exits with for ``sys.exit(code)``."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def main() -> int:
    if os.getpgrp() != os.getpid():  # started by hand, not by admission: the group it stops must be its own
        os.setsid()
    ending = Ending(LocalLayout(Path(sys.argv[1])), sys.argv[2])
    atexit.register(ending.at_exit)  # registered first, so it runs last: after the command's own hooks
    for signum in (*STOP_SIGNALS, signal.SIGALRM):
        signal.signal(signum, ending.on_signal)
    try:
        ending.spec = read_json(ending.layout.job_dir(ending.name) / "spec.json") or {}
        lower_priority(int(ending.spec.get("niceness") or 0))  # the host answers first (HASTE_LOCAL_NICENESS)
        signal.setitimer(signal.ITIMER_REAL, time_limit_s(ending.spec))
        run([str(part) for part in ending.spec["argv"]])
        ending.code = 0
    except SystemExit as exc:
        ending.code = exit_code(exc)
    except BaseException:
        traceback.print_exc()  # what Python prints for an uncaught exception
        ending.code = 1
    return ending.code


if __name__ == "__main__":
    sys.exit(main())
