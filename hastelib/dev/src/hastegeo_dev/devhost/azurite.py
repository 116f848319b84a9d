"""Start and stop Azurite (blob, queue and table) for the development host, the demo and tests.

Azurite comes from the project's pinned npm packages (``node_modules``). It
listens on ports chosen by the OS and prints them; we read them back, so
parallel test sessions never collide.

Its access log is off unless asked for (``access_log=True``, or
``HASTE_AZURITE_ACCESS_LOG=1`` for a stack someone is debugging). Node writes to a
pipe synchronously on Linux, so a log line per request made every storage call wait
on the Python thread that drains the pipe: under load, in a busy process, that
thread is late and Azurite stalls with the pipe full. After start-up only the last
lines are kept, for the error that reports Azurite's own failure.

Azurite runs with :data:`LOOKUPS` preloaded (ADR 0052): it finds a blob by its name
through the index it already keeps, instead of reading every blob it holds on each
delete, so a stack holding ten thousand jobs' blobs is as quick as an empty one.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections import deque
from pathlib import Path
from types import TracebackType

from hastegeo_dev.checkout import OWN_CHECKOUT
from hastegeo_dev.readiness import StartBound, StartWatch

# Azurite's well-known development account. It is public and documented, and
# only ever valid against a local emulator.
ACCOUNT_NAME = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

ACCESS_LOG_VARIABLE = "HASTE_AZURITE_ACCESS_LOG"
TAIL_LINES = 50
# Azurite prints its three endpoints after about 1 s of CPU; ``readiness`` says why the bound is not a wall time.
AZURITE_START = StartBound(stall_s=30.0, cpu_s=60.0, wall_s=600.0)

# Node loads it before Azurite (``--require``): Azurite's lookups by name use its index.
LOOKUPS = Path(__file__).with_name("azurite_lookups.js")
_LOOKUPS_ON = "haste: Azurite lookups by name use its index"

_LISTENING = re.compile(
    r"Azurite (Blob|Queue|Table) service (?:is )?successfully (?:listens on|listening at) (http://\S+)"
)


class AzuriteError(RuntimeError):
    pass


def find_azurite(repo_root: Path | None = None) -> str:
    """``node_modules/.bin/azurite`` here, in a parent or in this package's own checkout, else azurite on PATH."""
    roots = [repo_root] if repo_root else []
    roots += [Path.cwd(), *Path.cwd().parents, OWN_CHECKOUT]
    for root in roots:
        candidate = root / "node_modules" / ".bin" / "azurite"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("azurite")
    if found:
        return found
    raise AzuriteError("azurite not found: run `npm ci` at the repository root (the Makefile does this)")


class Azurite:
    """An Azurite process with blob, queue and table services on loopback."""

    def __init__(
        self,
        location: str | None = None,
        *,
        in_memory: bool = False,
        start_bound: StartBound = AZURITE_START,
        access_log: bool | None = None,
    ) -> None:
        self._location = location
        self._in_memory = in_memory
        self._access_log = os.environ.get(ACCESS_LOG_VARIABLE) == "1" if access_log is None else access_log
        # The output since start-up, bounded: with the access log on, a line per request.
        self.output: deque[str] = deque(maxlen=TAIL_LINES)
        self._start_bound = start_bound
        self._process: subprocess.Popen[str] | None = None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self.blob_url = ""
        self.queue_url = ""
        self.table_url = ""
        # Whether Azurite said the preload took (:data:`LOOKUPS`); without it Azurite is only slower.
        self.indexed_lookups = False

    @property
    def pid(self) -> int | None:
        """The Azurite process's id while it runs (the benches count its CPU)."""
        return self._process.pid if self._process is not None else None

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.blob_url};QueueEndpoint={self.queue_url};TableEndpoint={self.table_url};"
        )

    def start(self, blob_port: int = 0, queue_port: int = 0, table_port: int = 0) -> Azurite:
        args = [
            find_azurite(),
            "--blobHost", "127.0.0.1", "--blobPort", str(blob_port),
            "--queueHost", "127.0.0.1", "--queuePort", str(queue_port),
            "--skipApiVersionCheck", "--disableTelemetry", "--loose",
        ]  # fmt: skip
        if not self._access_log:
            args.append("--silent")
        if self._in_memory:
            args.append("--inMemoryPersistence")
        else:
            if self._location is None:
                self._tempdir = tempfile.TemporaryDirectory(prefix="azurite-")
                self._location = self._tempdir.name
            args += ["--location", self._location]
        args += ["--tableHost", "127.0.0.1", "--tablePort", str(table_port)]
        node_options = " ".join(filter(None, (os.environ.get("NODE_OPTIONS"), f'--require "{LOOKUPS}"')))
        self._process = subprocess.Popen(
            args,
            env={**os.environ, "NODE_OPTIONS": node_options},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        # A reader thread keeps draining output (a chatty Azurite must never
        # block on a full pipe) and hands start-up lines to us with a timeout.
        lines: queue.Queue[str | None] = queue.Queue()
        started = threading.Event()
        threading.Thread(target=self._drain, args=(lines, started), daemon=True, name="azurite-output").start()
        found: dict[str, str] = {}
        seen: list[str] = []
        watch = StartWatch(self._process.pid, self._start_bound)
        while len(found) < 3:
            # Judged after every line too: an Azurite that keeps printing without listening must still end.
            reason = watch.give_up()
            if reason is not None:
                self.stop()
                raise AzuriteError(f"Azurite did not start: {reason}\n" + "".join(seen[-20:]))
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                self.stop()
                raise AzuriteError("Azurite exited during start-up:\n" + "".join(seen[-20:]))
            seen.append(line)
            self.indexed_lookups = self.indexed_lookups or _LOOKUPS_ON in line
            match = _LISTENING.search(line)
            if match:
                found[match.group(1)] = match.group(2).rstrip("/") + f"/{ACCOUNT_NAME}"
        self.blob_url, self.queue_url, self.table_url = found["Blob"], found["Queue"], found["Table"]
        started.set()
        return self

    def _drain(self, lines: queue.Queue[str | None], started: threading.Event) -> None:
        """Hand start-up lines to ``start``; once it has them, keep only the last few (``output``)."""
        process = self._process
        if process is not None and process.stdout is not None:
            for line in process.stdout:
                if started.is_set():
                    self.output.append(line)
                else:
                    lines.put(line)
        lines.put(None)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> Azurite:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
