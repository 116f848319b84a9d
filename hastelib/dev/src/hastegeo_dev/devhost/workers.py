"""Queue worker processes of the development host, and the wake-ups it sends them.

With ``FUNCTIONS_WORKER_PROCESS_COUNT`` > 1 the host process serves the HTTP
triggers (and the timers) and that many worker processes run the queue triggers.
This mirrors Flex Consumption's per-function scaling, where HTTP triggers scale
on instances of their own: a burst of ``POST /api/jobs`` is not slowed by the
queue work it causes, which on one interpreter would share its GIL (measured in
docs/reliability.md, Load). Queue workers run at a lower CPU priority
(``WORKER_NICENESS``): on one machine that stands for the HTTP instances' own
CPUs. On Linux each worker leads a session of its own, so that autogroup
scheduling (which shares the CPU between sessions before nice values count) gives
it a group at that priority instead of a share of the host's; it dies with the
host (``PR_SET_PDEATHSIG``), as it did in the host's process group. The local jobs
it starts go lower still (``HASTE_LOCAL_NICENESS``). It only matters when the CPU
is contended; an idle machine runs the queue work as fast as before.

Per-function scaling also shrinks a function with no work to one instance. So the
first worker polls every queue at host.json's ``maxPollingInterval``, and the others
(standbys) let an empty queue's back-off grow to :data:`STANDBY_REST_POLLING_S`: at
rest the host polls each queue about once a second, as one instance would, instead
of once a second per worker (half the idle stack's storage calls with two workers,
ADR 0054). A standby finds work as soon as it is woken or its next poll finds a
message, and then polls as fast as the first.

When the host sends to a queue (an output binding), the platform wakes that
queue's listener at once. The workers learn of it over their standard input: one
line with the queue name, to one worker in turn, which then polls that queue now
instead of after its back-off.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO

from hastegeo.utils.priority import lower_priority

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

WORKER_NICENESS = 10
STANDBY_REST_POLLING_S = 10.0


def worker_command(argv: Sequence[str], niceness: int = WORKER_NICENESS) -> list[str]:
    """The command line of a queue worker: ``python -m hastegeo_dev.devhost`` with ``argv``, at nice value ``niceness``.

    It names this process as its host, so a worker that starts after the host died knows it.
    """
    host = ["--host-pid", str(os.getpid())]
    return [sys.executable, "-m", "hastegeo_dev.devhost", *argv, "--niceness", str(niceness), *host]


class QueueWorkers:
    """``count`` worker processes, each started with ``command`` (the standbys, every one but the first,
    with ``standby`` appended); they read wake-ups on standard input."""

    def __init__(self, count: int, command: Sequence[str], standby: Sequence[str] = ()) -> None:
        self._command = list(command)
        self._standby = list(standby)
        self._count = count
        self._processes: list[subprocess.Popen[bytes]] = []
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def start(self) -> None:
        # From the host's main thread: a worker's PR_SET_PDEATHSIG fires when the thread that
        # started it ends, not only the process (see run_below_the_host).
        self._processes = [
            subprocess.Popen(self._command + (self._standby if index else []), stdin=subprocess.PIPE)
            for index in range(self._count)
        ]

    def wake(self, queue_name: str) -> None:
        """Ask one worker (each in turn) to poll ``queue_name`` now. Never raises: a worker that
        has gone still gets the message at its next poll."""
        if not self._processes:
            return
        with self._lock:
            process = self._processes[next(self._turn) % len(self._processes)]
            stdin = process.stdin
            if stdin is None or stdin.closed:
                return
            try:
                stdin.write(queue_name.encode() + b"\n")
                stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                log.debug("worker %d did not take a wake-up for %s", process.pid, queue_name)

    def stop(self, timeout: float = 10.0) -> None:
        with self._lock:
            processes, self._processes = self._processes, []
        for process in processes:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()


def listen_for_wakes(stream: IO[bytes], wake: Callable[[str], None]) -> threading.Thread:
    """In a worker: call ``wake(queue_name)`` for each line the host writes to ``stream``, until it closes."""

    def run() -> None:
        for line in stream:
            name = line.strip().decode(errors="replace")
            if name:
                wake(name)

    thread = threading.Thread(target=run, daemon=True, name="devhost-wakes")
    thread.start()
    return thread


def run_below_the_host(niceness: int, host: int | None = None) -> None:
    """In a worker: run at nice value ``niceness``, in a session of its own where Linux allows it.

    Without its own session, a worker's nice value would only order it against the host
    inside their shared autogroup, while each local job (in a session of its own) weighed
    as much as both. The new session leaves the host's process group, so the worker asks
    the kernel to kill it when the host dies, as a signal to that group did before.
    """
    host = os.getppid() if host is None else host
    if niceness > 0 and sys.platform == "linux" and _die_with_parent():
        if os.getppid() != host:  # the host died before the request took effect
            os._exit(1)
        with contextlib.suppress(OSError):  # already a group leader: it stays where it is
            os.setsid()
    lower_priority(niceness)


def _die_with_parent() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
