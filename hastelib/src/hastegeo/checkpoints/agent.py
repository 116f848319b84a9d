"""What runs beside a workload on compute: put the latest checkpoint back, then copy the folder while it runs.

The workload harness starts it (``run_main(..., checkpoints=True)``) in the workload's own
process, so it costs no process of its own and is the same on every backend:

1. ``restore()`` before the workload starts: this job's latest committed set, else (a rerun that asked
   for it) the set of the job it resumes; what it put back, in words, for the workload's history.
2. a thread copies the folder every ``HASTE_CHECKPOINT_INTERVAL_S`` seconds when it changed;
3. ``sync()`` at once when the process is told to stop (SIGTERM: a preemption notice, a cancellation),
   and once more when the workload ends.

An empty folder is never copied: a workload that saves nothing costs no storage call beyond the
one look for a checkpoint at its start. A failed copy is reported on stderr and tried again at the
next one; the previous committed set stays the one a restore finds (see :mod:`.store`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hastegeo.checkpoints import layout
from hastegeo.checkpoints.store import CheckpointConflict, CheckpointStore, Committed, RestoreError

if TYPE_CHECKING:
    from azure.identity import ManagedIdentityCredential
    from azure.storage.blob import BlobServiceClient


class CheckpointAgent:
    def __init__(
        self,
        folder: Path,
        own: CheckpointStore,
        job_id: str,
        *,
        resume: CheckpointStore | None = None,
        interval_s: float = layout.DEFAULT_INTERVAL_S,
    ) -> None:
        self.folder = folder
        self.job_id = job_id
        self.attempt = 1
        self.restored: str | None = None
        self._own, self._resume, self._interval_s = own, resume, interval_s
        self._seen: Committed | None = None
        self._copied: tuple[tuple[str, int, int], ...] = ()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_environ(cls, folder: Path, environ: Mapping[str, str] | None = None) -> CheckpointAgent | None:
        """The agent this job's environment describes; None when it names no checkpoint location."""
        env = os.environ if environ is None else environ
        where = env.get(layout.BLOB_VARIABLE)
        if not where:
            return None
        service = node_blob_service(env)
        if service is None:
            _say(f"{layout.BLOB_VARIABLE} is set but no storage access is: checkpoints are not copied")
            return None
        container, prefix = layout.split_location(where)
        own = CheckpointStore(service.get_container_client(container), prefix)
        resume = None
        if env.get(layout.RESUME_VARIABLE):
            resume_container, resume_prefix = layout.split_location(env[layout.RESUME_VARIABLE])
            resume = CheckpointStore(service.get_container_client(resume_container), resume_prefix)
        return cls(folder, own, env.get("HASTE_JOB_ID", ""), resume=resume, interval_s=_interval(env))

    def restore(self) -> str | None:
        """Put the latest checkpoint in the folder; what was put back, in words (None: nothing was)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._seen = self._own.latest()
        source, store = (self._seen, self._own) if self._seen else (None, self._resume)
        if source is None and store is not None:
            source = store.latest()
        if self._seen is not None:
            self.attempt = self._seen.pointer.attempt + 1
        if source is None or store is None:
            return None
        try:
            store.restore(source.pointer, self.folder)
        except RestoreError as exc:
            _say(f"the checkpoint was not put back: {exc}")
            return None
        self._copied = layout.signature(self.folder)  # what is in the blob copy already
        self.restored = layout.describe(source.pointer, self.job_id)
        return self.restored

    def sync(self) -> bool:
        """Copy the folder if it changed since the last copy; True when a new set was committed."""
        with self._lock:
            current = layout.signature(self.folder)
            if not current or current == self._copied:
                return False
            try:
                try:
                    self._seen = self._own.publish(
                        self.folder, attempt=self.attempt, job_id=self.job_id, seen=self._seen
                    )
                except CheckpointConflict:
                    self._seen = self._own.latest()  # another writer of this job: commit after it
                    self._seen = self._own.publish(
                        self.folder, attempt=self.attempt, job_id=self.job_id, seen=self._seen
                    )
            except Exception as exc:
                _say(f"copying the checkpoint failed, will try again: {type(exc).__name__}")
                return False
            self._copied = current
            return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="checkpoint-copy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the periodic copies and make the last one."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._interval_s + 60)
        self.sync()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.sync()


def node_blob_service(env: Mapping[str, str]) -> BlobServiceClient | None:
    """Storage access as the node has it: a connection string, else the managed identity it names."""
    from azure.storage.blob import BlobServiceClient

    if env.get(layout.CONNECTION_VARIABLE):
        return BlobServiceClient.from_connection_string(env[layout.CONNECTION_VARIABLE])
    if env.get(layout.ACCOUNT_URL_VARIABLE) and env.get(layout.IDENTITY_VARIABLE):
        credential = _managed_identity(env[layout.IDENTITY_VARIABLE], env)
        return BlobServiceClient(env[layout.ACCOUNT_URL_VARIABLE], credential=credential)
    return None


def _managed_identity(identity: str, env: Mapping[str, str]) -> ManagedIdentityCredential:
    """The node's managed identity: a Batch pool's user-assigned one by its resource id, or (``compute``) the one
    an Azure ML cluster gives its jobs, by the client id Azure ML sets in ``DEFAULT_IDENTITY_CLIENT_ID`` (Learn:
    "Set up authentication between Azure Machine Learning and other services", compute cluster); without it, the
    cluster's system-assigned one. Azure ML's identity endpoint takes a client id, not a resource id."""
    from azure.identity import ManagedIdentityCredential

    if identity == layout.COMPUTE_IDENTITY:
        return ManagedIdentityCredential(client_id=env.get(layout.COMPUTE_CLIENT_ID_VARIABLE) or None)
    return ManagedIdentityCredential(identity_config={"mi_res_id": identity})


def _interval(env: Mapping[str, str]) -> float:
    """The seconds between copies the job was given; the default, or the shortest allowed, said when it was not usable.

    The pipeline passes its validated setting; anything else set by hand is read as leniently as it is said.
    """
    name, raw = layout.INTERVAL_VARIABLE, env.get(layout.INTERVAL_VARIABLE) or ""
    default, shortest = layout.DEFAULT_INTERVAL_S, layout.MIN_INTERVAL_S
    try:
        interval = float(raw) if raw else default
    except ValueError:
        _say(f"{name}={raw!r} is not a number of seconds: copying every {default:g}s")
        return default
    if not interval >= shortest:  # NaN too
        _say(f"{name}={raw} is shorter than {shortest:g}s: copying every {shortest:g}s")
        return shortest
    return interval


def _say(message: str) -> None:
    print(f"checkpoints: {message}", file=sys.stderr, flush=True)
