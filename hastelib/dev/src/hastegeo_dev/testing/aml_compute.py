"""A compute cluster for the Azure ML stand-in: each command job submitted to it runs as a real process.

What Azure ML does with a command job, played on this machine with the entity the adapter submitted:

- the container's private working directory (``CONTAINER_WORKDIR``) is a folder of the run's own:
  every environment variable under it is moved there;
- ``ro_mount`` inputs are downloaded from Azurite, ``rw_mount`` outputs are folders uploaded to their
  datastore paths when the command ends (the container a datastore names is its name with '_'
  replaced by '-', as in :class:`~hastegeo_dev.testing.aml_standin.StandInDatastores`);
- ``${{inputs.<name>}}`` and ``${{outputs.<name>}}`` in the command become those folders' paths;
- the process gets the entity's environment variables and what a cluster with a user-assigned
  identity sets (``DEFAULT_IDENTITY_CLIENT_ID``); the identity itself is played as on the Batch
  test service (:func:`hastegeo_dev.testing.node.process_env`);
- the job is ``Running`` while the process runs, then ``Completed`` (exit code 0) or ``Failed``;
  a cancellation (``CancelRequested``) stops it with SIGTERM and ends it ``Canceled``.

A fault takes the node away under a job (:meth:`StandInCluster.interrupt_on_output`): SIGTERM when a
file of the job first contains a text, SIGKILL after the notice, and the job ends ``Failed``. No
Docker: the image is recorded, not run; ``python`` on the job's PATH is this interpreter.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from azure.storage.blob import BlobServiceClient

from hastegeo.checkpoints.layout import COMPUTE_CLIENT_ID_VARIABLE
from hastegeo.compute.azure_ml.entities import CONTAINER_WORKDIR
from hastegeo.compute.transfer import download, download_prefix, upload
from hastegeo.utils.errors import describe_exception
from hastegeo.workloads._run.harness import iter_files
from hastegeo_dev.testing.aml_standin import StandInMLClient
from hastegeo_dev.testing.node import process_env, python_shim, stop_with_notice, wait_for_output

CLIENT_ID = "00000000-0000-0000-0000-00000000c1d0"  # the cluster's user-assigned identity, as its jobs see it
INTERRUPTED = ("ServiceError", "The node running the job was taken away (stand-in fault)")
_BINDING = re.compile(r"\$\{\{(inputs|outputs)\.([A-Za-z0-9_]+)\}\}")
_DATASTORE_PATH = re.compile(r"azureml://datastores/(?P<datastore>[^/]+)/paths/(?P<path>.*)")
_LIMIT_S = 600.0  # a job the test forgot is stopped after this long


@dataclass(frozen=True)
class Interruption:
    text: str
    path: str  # relative to the job's working directory
    notice_s: float


class StandInCluster:
    """Runs every job ``client`` receives from now on; ``stop()`` kills what still runs."""

    def __init__(self, client: StandInMLClient, storage_connection_string: str, root: Path) -> None:
        self.client = client
        self._connection = storage_connection_string
        self._blobs = BlobServiceClient.from_connection_string(storage_connection_string)
        self._root = root
        self._shim = python_shim(root / "bin")
        self._faults: deque[Interruption] = deque()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._processes: list[subprocess.Popen[bytes]] = []
        self.runs: dict[str, int] = {}  # job name → processes started for it
        client.state.on_create = self.start

    def interrupt_on_output(self, text: str, *, path: str, notice_s: float = 10.0) -> StandInCluster:
        """The next job started loses its node once ``path`` (relative to its working directory) contains
        ``text``: SIGTERM, SIGKILL ``notice_s`` later if it still runs, and the job ends ``Failed``."""
        with self._lock:
            self._faults.append(Interruption(text, path, notice_s))
        return self

    def start(self, name: str, job: Any) -> None:
        thread = threading.Thread(target=self._run, args=(name, job), daemon=True, name=f"aml-job-{name}")
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def stop(self) -> None:
        with self._lock:
            processes, threads = list(self._processes), list(self._threads)
        for process in processes:
            if process.poll() is None:
                process.kill()
        for thread in threads:
            thread.join(timeout=5)

    # -- one run -----------------------------------------------------------------------

    def _run(self, name: str, job: Any) -> None:
        try:
            self._run_once(name, job)
        except Exception as exc:  # the compute's own failure ends the job, never leaves it running
            self.client.set_status(name, "Failed", error=("StandInError", describe_exception(exc)))
            raise

    def _run_once(self, name: str, job: Any) -> None:
        with self._lock:
            self.runs[name] = self.runs.get(name, 0) + 1
            run = self._root / name / f"run-{self.runs[name]}"
            fault = self._faults.popleft() if self._faults else None
        workdir = run / "container" / Path(CONTAINER_WORKDIR).name
        workdir.mkdir(parents=True)
        bindings = self._mount_inputs(job, run / "mounts" / "inputs")
        outputs = {key: run / "mounts" / "outputs" / key for key in job.outputs}
        for key, folder in outputs.items():
            folder.mkdir(parents=True)
            bindings[f"outputs.{key}"] = str(folder)
        command = _BINDING.sub(lambda match: bindings[f"{match.group(1)}.{match.group(2)}"], str(job.command))
        variables = {key: _moved(str(value), workdir) for key, value in (job.environment_variables or {}).items()}
        env = process_env(self._shim, {**variables, COMPUTE_CLIENT_ID_VARIABLE: CLIENT_ID}, self._connection)
        self.client.set_status(name, "Running")
        with (run / "std_log.txt").open("wb") as log:
            process = subprocess.Popen(
                ["/bin/sh", "-c", command], cwd=run, env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
            with self._lock:
                self._processes.append(process)
            code = self._watch(name, process, workdir, fault)
        for key, folder in outputs.items():  # a rw_mount writes through: what the job wrote is there
            container, prefix = _datastore_path(job.outputs[key].path)
            files = [(path, prefix + path.relative_to(folder).as_posix()) for path in iter_files(folder)]
            upload(self._blobs.get_container_client(container), files)
        if code is None:
            self.client.set_status(name, "Failed", error=INTERRUPTED)
        elif self.client.state.statuses.get(name) == "CancelRequested":
            self.client.set_status(name, "Canceled")
        elif code == 0:
            self.client.set_status(name, "Completed")
        else:
            self.client.set_status(name, "Failed", error=("UserError", f"The command exited with code {code}"))

    def _watch(
        self, name: str, process: subprocess.Popen[bytes], workdir: Path, fault: Interruption | None
    ) -> int | None:
        """The exit code; None when the fault took the node away. A cancellation is told with SIGTERM."""
        if fault is not None:
            try:
                code = wait_for_output(process, workdir / fault.path, fault.text, _LIMIT_S)
            except subprocess.TimeoutExpired:
                code = stop_with_notice(process, 0)
            if code is None:
                stop_with_notice(process, fault.notice_s)
                return None
            return code
        while (code := process.poll()) is None:
            if self.client.state.statuses.get(name) == "CancelRequested":
                return stop_with_notice(process, 10.0)
            time.sleep(0.05)
        return code

    def _mount_inputs(self, job: Any, root: Path) -> dict[str, str]:
        """Each input downloaded as its mount would show it: a folder, or the one file."""
        bindings = {}
        for key, item in (job.inputs or {}).items():
            container, path = _datastore_path(item.path)
            client = self._blobs.get_container_client(container)
            if str(item.type) == "uri_folder":
                download_prefix(client, path, root / key, strip=path)
                bindings[f"inputs.{key}"] = str(root / key)
            else:
                target = root / key / path.rsplit("/", 1)[-1]
                download(client.get_blob_client(path), target)
                bindings[f"inputs.{key}"] = str(target)
        return bindings


def _datastore_path(uri: str) -> tuple[str, str]:
    """``azureml://datastores/haste_outputs/paths/jobs/x/`` → (``haste-outputs``, ``jobs/x/``)."""
    match = _DATASTORE_PATH.fullmatch(uri)
    if match is None:
        raise ValueError(f"{uri!r} is not a datastore path")
    return match["datastore"].replace("_", "-"), match["path"]


def _moved(value: str, workdir: Path) -> str:
    """A path in the container's working directory, moved to the run's own folder; anything else as it is."""
    if value == CONTAINER_WORKDIR or value.startswith(CONTAINER_WORKDIR + "/"):
        return str(workdir) + value[len(CONTAINER_WORKDIR) :]
    return value
