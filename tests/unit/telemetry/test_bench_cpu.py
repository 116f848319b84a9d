"""The bench's CPU measure: a process tree's CPU seconds, its own session and the host's workers
(workloads run in sessions of their own, and so do the development host's queue workers)."""

from __future__ import annotations

import subprocess
import sys

from tests.bench.process_cpu import TreeCpu, reaped_cpu, spent, tree_cpu

SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"
# A host-like parent in its own session that starts a workload-like child in a new session; both spin 0.6 s.
PARENT = (
    "import os, subprocess, sys, time\n"
    "os.setsid()\n"
    "child = subprocess.Popen([sys.executable, '-c', *sys.argv[1:]], start_new_session=True)\n"
    "print(child.pid, flush=True)\n" + SPIN.format(seconds=0.6) + "child.wait()\n"
    "print('done', flush=True)\n"
    "time.sleep(30)\n"
)


def test_the_tree_counts_its_session_and_leaves_out_a_child_in_a_session_of_its_own() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, SPIN.format(seconds=0.6)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        cpu = TreeCpu(parent.pid)
        cpu.start()
        sample = tree_cpu(parent.pid)
        assert parent.pid in sample
        assert child_pid not in sample  # alive, a child, but in a session of its own
        assert parent.stdout.readline().strip() == "done"
        measured = cpu.stop()
        assert 0.4 < measured < 0.9, measured  # the parent's 0.6 s, not the child's as well
        # Reaped by the parent, the child's 0.6 s is counted apart (the workloads of a bench window).
        assert 0.4 < reaped_cpu(parent.pid)[parent.pid] < 0.9
    finally:
        parent.kill()
        parent.wait(10)


def test_the_tree_counts_a_host_worker_in_a_session_of_its_own() -> None:
    """A queue worker leads its own session (ADR 0017); its command names the development host."""
    code = "import time\ntime.sleep(30)\n"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, code, "--as", "hastegeo_dev.devhost"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        assert child_pid in tree_cpu(parent.pid)
    finally:
        parent.kill()
        parent.wait(10)
        subprocess.run(["kill", str(child_pid)], check=False)


def test_spent_counts_a_process_born_in_between_whole() -> None:
    assert spent({1: 1.0, 2: 2.0}, {1: 1.5, 2: 2.25, 3: 0.5}) == 1.25
    assert spent({}, {}) == 0.0
    assert tree_cpu(2**22 + 12345) == {}  # no such process
