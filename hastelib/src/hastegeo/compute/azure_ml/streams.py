"""Azure ML: the workload's stdout and stderr each in a file of its own, read by range while it runs (docs/adr/0045).

Run history keeps one log of a command job's output, both streams in one (``user_logs/std_log.txt``).
So the job's command starts the workload under a small tee (:data:`TEE`, standard library only, run
by the image's ``python3``): each stream still goes to the console, where run history logs it as
before, and also to ``logs/stdout.txt`` or ``logs/stderr.txt`` in the job's working directory, which
is the job's ``logs`` output, mounted read-write on its blob prefix. The files are created before the
workload starts, written as the workload writes, and synced every :data:`SYNC_S` seconds while new
bytes came (and at the end), so the mount writes them to blob
while the job runs; the adapter reads them by range there (:mod:`.joblog`). An image without
``python3`` runs the workload as before: no files, and the combined log answers for both streams.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

SYNC_S = 1.0
# argv: the folder for the two files, then the workload's argv. Exits as the workload did (128 + signal when
# killed), and passes SIGTERM and SIGINT on to it, so a job told to stop (a cancel, an eviction) can save its work.
TEE = f"""
import os, signal, subprocess, sys, threading, time
folder, argv = sys.argv[1], sys.argv[2:]
files = {{name: open(os.path.join(folder, name + ".txt"), "ab", buffering=0) for name in ("stdout", "stderr")}}
written = {{name: False for name in files}}
for file in files.values():
    os.fsync(file.fileno())
child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
for number in (signal.SIGTERM, signal.SIGINT):
    signal.signal(number, lambda received, frame: child.send_signal(received))
def sync():
    while True:
        time.sleep({SYNC_S})
        for name, file in files.items():
            if written[name]:
                written[name] = False
                try:
                    os.fsync(file.fileno())
                except (OSError, ValueError):
                    pass
def pump(name, pipe, console):
    while True:
        chunk = os.read(pipe.fileno(), 65536)
        if not chunk:
            break
        console.write(chunk); console.flush(); files[name].write(chunk); written[name] = True
threading.Thread(target=sync, daemon=True).start()
pumps = [threading.Thread(target=pump, args=("stdout", child.stdout, sys.stdout.buffer)),
         threading.Thread(target=pump, args=("stderr", child.stderr, sys.stderr.buffer))]
for thread in pumps:
    thread.start()
code = child.wait()
for thread in pumps:
    thread.join()
for file in files.values():
    os.fsync(file.fileno()); file.close()
sys.exit(code if code >= 0 else 128 - code)
"""


def exec_lines(argv: Sequence[str], folder: str) -> list[str]:
    """Shell lines that run ``argv`` with its streams also written to ``folder`` (a shell word, expanded: say
    ``"$HASTE_JOB_WORKDIR/logs"``), or as they are without python3."""
    tee = f"{shlex.join(['python3', '-c', TEE])} {folder} {shlex.join(argv)}"
    return [
        "if command -v python3 >/dev/null 2>&1; then",
        f"  exec {tee}",
        "fi",
        "exec " + shlex.join(argv),
    ]
