"""Lower a process's CPU priority so that it yields to the processes that must answer first.

Standard library only: every local job's process calls it before it runs the workload.

``os.nice`` alone is not enough on Linux with autogroup scheduling (``CONFIG_SCHED_AUTOGROUP``,
on by default in most distributions): the scheduler first shares the CPU fairly between
sessions, and a nice value only orders the processes inside one session. A local job starts
in a session of its own, so at nice 19 it still weighed as much as the whole host serving
the API: with eight busy jobs the host and Azurite got about a third of a core each, and
accepting requests ran at a third of what the accept path alone reaches (ADR 0017). A session leader therefore also
sets its session's autogroup nice value (``/proc/self/autogroup``), which any process may
raise for its own session.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

AUTOGROUP = Path("/proc/self/autogroup")


def lower_priority(to: int) -> int:
    """Run this process, and the processes it starts, at nice value ``to``, unless it already runs lower.

    Returns the nice value it runs at. When this process leads its session, the session's
    autogroup gets the same value, so the priority holds against other sessions too. Elsewhere
    (no autogroup, another OS) the nice value is all there is. Never raises for a priority it
    cannot set: running at the inherited one is the only cost.
    """
    if not hasattr(os, "nice"):
        return 0
    current = os.nice(0)
    value = os.nice(to - current) if to > current else current
    # A new session starts a new autogroup at nice 0, whatever this process inherited.
    if value > 0 and os.getsid(0) == os.getpid():  # this session alone: never lower a parent's
        with contextlib.suppress(OSError):
            AUTOGROUP.write_text(str(value), encoding="ascii")
    return value
