"""What the test doubles' compute nodes share: how a job's process is started, watched and taken away.

The Batch test service runs tasks and the Azure ML stand-in's compute runs command jobs as local
processes; both give them the same few variables of ours, a ``python`` that is this interpreter, the
node's identity played by the Azurite connection string, and the same preemption: SIGTERM (the
eviction notice), then SIGKILL if the process is still running when the notice is over.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from hastegeo.checkpoints.layout import CONNECTION_VARIABLE as CHECKPOINT_CONNECTION
from hastegeo.checkpoints.layout import IDENTITY_VARIABLE as CHECKPOINT_IDENTITY


def python_shim(folder: Path) -> Path:
    """``folder`` with ``python`` and ``python3`` that exec this interpreter (a job's command says ``python``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for alias in ("python", "python3"):
        script = folder / alias
        script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n', encoding="utf-8")
        script.chmod(0o755)
    return folder


def process_env(shim: Path, variables: Mapping[str, str], storage_connection_string: str | None) -> dict[str, str]:
    """A job process's environment: ``HOME``, ``LANG`` and ``TMPDIR`` of ours, ``PATH`` with ``shim`` first, then
    ``variables``. A job that copies checkpoints with its node's managed identity gets the Azurite connection
    string the double stages and uploads with: that is how a test node plays the identity (a real node gets a
    token for it instead)."""
    env = {key: os.environ[key] for key in ("HOME", "LANG", "TMPDIR") if key in os.environ}
    env["PATH"] = f"{shim}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    env.update(variables)
    if env.get(CHECKPOINT_IDENTITY) and storage_connection_string:
        env[CHECKPOINT_CONNECTION] = storage_connection_string
    return env


def wait_for_output(process: subprocess.Popen[bytes], path: Path, text: str, limit: float) -> int | None:
    """The exit code, or None once ``path`` contains ``text`` while it runs (the moment to preempt).

    Raises:
        subprocess.TimeoutExpired: past ``limit`` seconds.
    """
    deadline = time.monotonic() + limit
    needle = text.encode()
    while True:
        code = process.poll()
        if code is not None:
            return code
        with contextlib.suppress(OSError):
            if needle in path.read_bytes():
                return None
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, limit)
        time.sleep(0.01)


def stop_with_notice(process: subprocess.Popen[bytes], notice_s: float) -> int:
    """SIGTERM (a spot node's eviction notice reaching the job), then SIGKILL after ``notice_s``."""
    process.terminate()
    try:
        return process.wait(timeout=notice_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()
