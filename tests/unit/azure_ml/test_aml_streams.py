"""The Azure ML job's command writes each stream to a file of its own, and still to the console (docs/adr/0045).

The command's last lines run for real in ``sh`` with this interpreter as ``python3``: the workload
prints to both streams, the files hold one stream each, the console both, and the exit code and a
SIGTERM pass through.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hastegeo.compute.azure_ml.streams import exec_lines

WORKLOAD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (print('saved on SIGTERM', flush=True), sys.exit(5)))\n"
    "print('out 1', flush=True); print('err 1', file=sys.stderr, flush=True)\n"
    "print('out 2', flush=True)\n"
    "if sys.argv[1:] == ['wait']:\n"
    "    time.sleep(30)\n"
    "sys.exit(3)\n"
)


def start(tmp_path: Path, *args: str, with_python3: bool = True) -> subprocess.Popen[bytes]:
    logs = tmp_path / "logs"
    logs.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if with_python3:
        (bin_dir / "python3").symlink_to(sys.executable)
    (bin_dir / "python").symlink_to(sys.executable)
    script = "\n".join(["set -e", *exec_lines(["python", "-c", WORKLOAD, *args], '"$HASTE_JOB_WORKDIR/logs"')])
    env = {"PATH": str(bin_dir), "HASTE_JOB_WORKDIR": str(tmp_path)}  # no python3 but the one linked here
    return subprocess.Popen(["/bin/sh", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_each_stream_goes_to_its_own_file_and_to_the_console(tmp_path: Path) -> None:
    process = start(tmp_path)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 3  # the workload's exit code
    assert (tmp_path / "logs" / "stdout.txt").read_bytes() == b"out 1\nout 2\n"
    assert (tmp_path / "logs" / "stderr.txt").read_bytes() == b"err 1\n"
    assert (out, err) == (b"out 1\nout 2\n", b"err 1\n")  # run history's log still gets both


def test_a_sigterm_reaches_the_workload(tmp_path: Path) -> None:
    process = start(tmp_path, "wait")
    deadline = time.monotonic() + 20
    stdout = tmp_path / "logs" / "stdout.txt"
    while not stdout.exists() or b"out 2" not in stdout.read_bytes():
        assert time.monotonic() < deadline, "the workload never printed"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGTERM)
    process.communicate(timeout=30)
    assert process.returncode == 5  # the workload's own handler ran
    assert (tmp_path / "logs" / "stdout.txt").read_bytes().endswith(b"saved on SIGTERM\n")


def test_without_python3_the_workload_runs_as_before_and_writes_no_files(tmp_path: Path) -> None:
    process = start(tmp_path, with_python3=False)
    out, err = process.communicate(timeout=30)
    assert (process.returncode, out, err) == (3, b"out 1\nout 2\n", b"err 1\n")
    assert list((tmp_path / "logs").iterdir()) == []
