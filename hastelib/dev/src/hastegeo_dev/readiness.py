"""How long a starting process may take, judged by its progress rather than the wall clock.

A fixed wall-clock bound answers the wrong question on a busy machine: the
development host needs about 3 s of CPU to import the app, which is 3 s on a
quiet machine and close to a minute when every core is taken. Giving up then
kills a healthy host. What tells a hung start from a slow one is whether the
process still makes progress, and the kernel counts that for us: the CPU time
it has been given.

So a start fails when the process

- has used no CPU for ``stall_s`` of wall time (it hangs: a deadlock, a
  connection that never answers);
- has used ``cpu_s`` of CPU without becoming ready (it spins);
- or, whatever it does, after ``wall_s`` of wall time (the last resort).

On a quiet machine a hung start is still caught after ``stall_s``, as the old
fixed bound caught it; on a busy one a start that progresses gets up to
``wall_s``. Where the process's CPU time cannot be read (no ``/proc``), the
stall is counted from the start, which is the old fixed bound again.

The verdict is a pure function of the samples so it is tested without
processes; ``process_cpu_seconds`` is the only part that reads the system.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class StartBound:
    """The three limits of a start, in seconds."""

    stall_s: float = 60.0
    cpu_s: float = 60.0
    wall_s: float = 600.0

    def verdict(self, *, elapsed_s: float, since_progress_s: float, cpu_used_s: float | None) -> str | None:
        """Why to give up on the start now, or ``None`` to keep waiting."""
        if elapsed_s >= self.wall_s:
            return f"not ready after {elapsed_s:.0f}s"
        if cpu_used_s is not None and cpu_used_s >= self.cpu_s:
            return f"not ready after {cpu_used_s:.0f}s of CPU time"
        if since_progress_s >= self.stall_s:
            if cpu_used_s is None:
                return f"not ready within {self.stall_s:.0f}s"
            return f"no progress for {since_progress_s:.0f}s (not ready after {cpu_used_s:.1f}s of CPU time)"
        return None


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of ``pid`` from ``/proc``, or ``None`` where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            return cpu_seconds_from_stat(stat.read(), os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds_from_stat(text: str, ticks_per_second: int) -> float:
    """utime plus stime (fields 14 and 15 of proc(5)) of one ``/proc/<pid>/stat`` line, in seconds."""
    # The command name (field 2) may hold spaces and parentheses; the fields after its last ')' are fixed.
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_second


@dataclass
class StartWatch:
    """Samples one starting process and says when to give up on it."""

    pid: int
    bound: StartBound = field(default_factory=StartBound)
    clock: Callable[[], float] = time.monotonic
    cpu_of: Callable[[int], float | None] = process_cpu_seconds

    def __post_init__(self) -> None:
        self._started = self.clock()
        self._cpu_at_start = self.cpu_of(self.pid)
        self._last_cpu = self._cpu_at_start
        self._last_progress = self._started

    def give_up(self) -> str | None:
        """Take a sample; the reason to stop waiting, or ``None``."""
        now = self.clock()
        cpu = self.cpu_of(self.pid)
        if cpu is not None and (self._last_cpu is None or cpu > self._last_cpu):
            self._last_cpu = cpu
            self._last_progress = now
        used = None if cpu is None or self._cpu_at_start is None else cpu - self._cpu_at_start
        return self.bound.verdict(
            elapsed_s=now - self._started, since_progress_s=now - self._last_progress, cpu_used_s=used
        )
