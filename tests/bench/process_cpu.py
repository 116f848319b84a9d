"""CPU seconds a process tree spent over a window: the bench's load-insensitive cost measure.

Wall time on a shared machine moves with everyone else's load; the CPU time a
process was scheduled for barely does. :class:`TreeCpu` samples user + system
time of a root process and those of its descendants that stay in its session,
and of the development host's worker processes (which lead sessions of their own,
see ``hastegeo_dev.devhost.workers``). The local backend starts each workload in a
session of its own, so workloads, which cost the same traced or not, are left out.
:func:`reaped_cpu` counts them apart: a workload's CPU is added to the process
that waits for it (its parent, a queue worker) once it has ended, so the tree's
reaped children say what the workloads of a window cost, for the machine-wide
account beside bare runs. A measurement instrument for the benches, never part of the app.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

import psutil


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def host_worker(process: psutil.Process) -> bool:
    """Whether ``process`` is one of the development host's own processes (the host, a queue worker)."""
    try:
        return "hastegeo_dev.devhost" in " ".join(process.cmdline())
    except psutil.Error:
        return False


def tree_cpu(root_pid: int, *, same_session: bool = True) -> dict[int, float]:
    """User + system CPU seconds of ``root_pid`` and its (same-session, or host worker) descendants, by pid."""
    return _sample(root_pid, same_session, lambda times: times.user + times.system)


def reaped_cpu(root_pid: int) -> dict[int, float]:
    """User + system CPU seconds of the ended children each process of the tree has waited for, by pid.

    The same processes as :func:`tree_cpu`; what a child costs is added here only once its
    parent has reaped it, so a window that ends with no job running has counted every one.
    """
    return _sample(root_pid, True, lambda times: times.children_user + times.children_system)


def _sample(root_pid: int, same_session: bool, seconds_of: Callable[[Any], float]) -> dict[int, float]:
    try:
        root = psutil.Process(root_pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return {}
    session = _session(root_pid)
    seconds: dict[int, float] = {}
    for process in processes:
        if same_session and _session(process.pid) != session and not host_worker(process):
            continue
        with contextlib.suppress(psutil.Error):
            seconds[process.pid] = seconds_of(process.cpu_times())
    return seconds


def spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two :func:`tree_cpu` samples (a process born in between counts whole)."""
    return sum(value - before.get(pid, 0.0) for pid, value in after.items())


class TreeCpu:
    """``start()`` … ``stop()``: the CPU seconds the tree of ``root_pid`` spent in between."""

    def __init__(self, root_pid: int, *, same_session: bool = True) -> None:
        self._pid = root_pid
        self._same_session = same_session
        self._before: dict[int, float] = {}

    def start(self) -> None:
        self._before = tree_cpu(self._pid, same_session=self._same_session)

    def stop(self) -> float:
        return spent(self._before, tree_cpu(self._pid, same_session=self._same_session))
