"""The embedded stack: Azurite, plus the development Functions host in its own process.

The host runs as a separate process (``python -m hastegeo_dev.devhost``) so it
can be stopped, killed and restarted like a real Functions host, while
Azurite and the local backend's job folders carry the state across.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

from hastegeo.runtime import ensure_storage
from hastegeo.settings.load import load_settings
from hastegeo_dev.checkout import repo_root
from hastegeo_dev.devhost.azurite import Azurite
from hastegeo_dev.readiness import StartBound, StartWatch

# A host imports the app in about 3 s of CPU; see ``readiness`` for why the bound is not a fixed wall time.
HOST_START = StartBound(stall_s=60.0, cpu_s=60.0, wall_s=600.0)
STOPS = (signal.SIGINT, signal.SIGTERM)  # what ends LocalStack.serve
# Who the stack's callers are unless HASTE_DEV_PRINCIPAL says otherwise: an admin, so the demo can do everything.
DEFAULT_DEV_PRINCIPAL = "name=dev@localhost;roles=Haste.Admin"


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HostProcess:
    """One development host process serving ``function_app:app``."""

    name = "development host"
    start_bound = HOST_START

    def __init__(self, root: Path, env: dict[str, str], port: int, log_path: Path, lease_seconds: int = 30) -> None:
        self.lease_seconds = lease_seconds
        self.root = root
        self.env = env
        self.port = port
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The host's command line: ``function_app:app`` under the development host."""
        return [
            sys.executable,
            "-m",
            "hastegeo_dev.devhost",
            "--app",
            "function_app:app",
            "--port",
            str(self.port),
            "--lease-seconds",
            str(self.lease_seconds),
            # The platform answers CORS from the Function App's settings; so does the development host.
            *(f"--cors-origin={origin}" for origin in _csv(self.env.get("HASTE_CORS_ALLOWED_ORIGINS", ""))),
        ]

    def start(self) -> Self:
        """Start the host and return once ``/api/health`` answers, judged by progress (``readiness``)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        watch = StartWatch(self.process.pid, self.start_bound)
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the {self.name} exited during start-up; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/api/health", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.1)
            reason = watch.give_up()
            if reason is not None:
                self.kill()
                raise RuntimeError(f"the {self.name} did not answer /api/health: {reason}; see {self.log_path}")

    def stop(self, timeout: float = 15.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def kill(self) -> None:
        """SIGKILL, as a crash would: nothing gets to clean up."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def allow_console_reads(connection_string: str, port: int) -> None:
    """Let the console's origin read blobs (GET/HEAD only) with the read URLs the API signs.

    The console draws charts from small JSON outputs, fetched from storage, which is
    another origin (Azurite's port locally, the account in Azure, where the storage
    module sets the same rule). The signature in each URL is still what grants the read.
    """
    from azure.storage.blob import BlobServiceClient, CorsRule

    origins = [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]
    rule = CorsRule(origins, ["GET", "HEAD"], allowed_headers=["*"], exposed_headers=["*"], max_age_in_seconds=600)
    BlobServiceClient.from_connection_string(connection_string).set_service_properties(cors=[rule])


class LocalStack:
    """Azurite + the development host, configured through environment variables only.

    The app runs with ``HASTE_AUTH_MODE=app_service`` and the host injects the caller
    ``HASTE_DEV_PRINCIPAL`` (from ``settings`` or the environment; default: an admin,
    ``DEFAULT_DEV_PRINCIPAL``) into requests that carry no principal.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        settings: dict[str, str] | None = None,
        port: int | None = None,
        root: Path | None = None,
        in_memory: bool = True,
        lease_seconds: int = 30,
    ) -> None:
        self.lease_seconds = lease_seconds
        self.workdir = workdir
        self.root = root or repo_root()
        self.azurite = Azurite(in_memory=in_memory, location=None if in_memory else str(workdir / "azurite"))
        self.extra = settings or {}
        self.port = port or free_port()
        self.host: HostProcess | None = None

    @property
    def env(self) -> dict[str, str]:
        # Settings from the caller's environment pass through, except storage, which is this stack's Azurite.
        env = {key: value for key, value in os.environ.items() if not key.startswith("AzureWebJobs")}
        env.setdefault("HASTE_DEV_PRINCIPAL", DEFAULT_DEV_PRINCIPAL)
        env.update(
            {
                "AzureWebJobsStorage": self.azurite.connection_string,
                "HASTE_LOCAL_ROOT": str(self.workdir / "local"),
                # The real path: the app trusts only the principal header, which the host injects.
                "HASTE_AUTH_MODE": "app_service",
                "PYTHONUNBUFFERED": "1",
                **self.extra,
            }
        )
        return env

    @property
    def base_url(self) -> str:
        assert self.host is not None
        return self.host.base_url

    @property
    def console_url(self) -> str:
        """Where a browser opens the web console (docs/adr/0014)."""
        return f"{self.base_url}/api/console/"

    def start(self) -> LocalStack:
        """Start what is not running yet; on a failure, stop what this call started and raise.

        ``with LocalStack(...)`` runs no ``__exit__`` when ``__enter__`` raises: an Azurite left
        behind by a host that missed its start bound would run on, unowned, until the machine stops.
        """
        self.workdir.mkdir(parents=True, exist_ok=True)
        started_azurite = not self.azurite.blob_url
        if started_azurite:
            self.azurite.start()
        try:
            # Provision like the infrastructure does in Azure, so callers can upload inputs at once.
            ensure_storage(load_settings(self.env))
            allow_console_reads(self.azurite.connection_string, self.port)
            self.start_host()
        except BaseException:
            if started_azurite:
                self.azurite.stop()
            raise
        return self

    def start_host(self) -> HostProcess:
        self.host = HostProcess(self.root, self.env, self.port, self.workdir / "host.log", self.lease_seconds).start()
        return self.host

    def serve(self) -> None:
        """Keep the stack up until Ctrl-C, SIGTERM, or until its host stops by itself.

        Both signals are handled here, not left to Python's defaults: a SIGTERM would end this
        process without stopping the host and Azurite (in sessions of their own, they outlive
        it), and a shell starting it in the background leaves SIGINT ignored.
        """
        stopping: list[int] = []
        previous = {signum: signal.signal(signum, lambda signum, frame: stopping.append(signum)) for signum in STOPS}
        try:
            while not stopping and self.host is not None and self.host.process is not None:
                if self.host.process.poll() is not None:
                    return
                time.sleep(0.2)
            print("stopping")
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def stop(self) -> None:
        if self.host is not None:
            self.host.stop()
        self.azurite.stop()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
