"""The local backend: each job a real process group on this machine, state on disk.

Submit stages the inputs from blob into the job's working directory and
queues it; when a slot is free, admission starts the workload as one process
in a session of its own (a Python command through the local node's
:mod:`~hastegeo.compute.local_node.run`, which records its own end), and the
host that started it reaps it. ``status`` only reports; once the workload has
ended, :meth:`LocalBackend.collect_outputs` (the contract's explicit step, taken
by the execution service before it reports an end) uploads ``outputs/**`` and
``logs/**`` to the job's blob prefix — the layout Azure Batch output files
produce — so post-processing reads the same blobs on every backend. Uploading
here, not in the job's process, keeps the Azure SDK out of it (ADR 0002).

Storage may stop answering for a while. Staging and uploading go through the
context's transfer client, whose azure-core retry policy is the one owner of
retries (:func:`hastegeo.runtime.transfer_retry`, about half a minute); past
that budget the step fails transiently and the pipeline tries it again later
(the submit message comes back; the poll chain asks for the status again). Every job
that ends has an exit record (``state/exit.json``): written by the
workload's own process, by the host that reaps it when it could not (a
SIGKILL, a command that is not Python), by a failed staging (the pipeline may
stage again), or by ``status`` when the workload is gone without one (ADR 0015).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from azure.core.exceptions import AzureError, ResourceNotFoundError

from hastegeo.checkpoints.access import connection_env
from hastegeo.compute.capacity import CapacityWait, limit_reason
from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import (
    BlobLocation,
    ComputeBackend,
    ComputeJobHandle,
    ComputeJobSpec,
    ComputeState,
    ComputeStatus,
    InputFile,
    OutputRead,
)
from hastegeo.compute.local.settings import LocalSettings
from hastegeo.compute.local_node.layout import (
    NOTICE,
    Launched,
    LocalLayout,
    file_lock,
    pid_alive,
    time_limit_reason,
)
from hastegeo.compute.tail import TAIL_BYTES, with_stderr
from hastegeo.compute.transfer import download, download_prefix, upload
from hastegeo.costs.attribution import LocalAttempt
from hastegeo.costs.usage import Run, Usage
from hastegeo.utils.errors import (
    ConfigurationError,
    HasteError,
    TerminalBackendError,
    TransientBackendError,
    describe_exception,
)
from hastegeo.utils.files import read_json, write_json

log = logging.getLogger(__name__)

TAIL_MAX_BYTES = 64 * 1024
STAGING_FAILED = "staging"  # exit.json "stage" of a job whose inputs could not be staged


class LocalBackend(ComputeBackend):
    name: ClassVar[str] = "local"
    status_outlives_cleanup: ClassVar[bool] = True  # cleanup removes the working files, never state/exit.json

    def __init__(self, context: BackendContext, root: Path, slots: int, python: str, niceness: int = 0) -> None:
        self._context = context
        self._blobs = context.transfer_blobs or context.blob_service
        self._layout = LocalLayout(root, connection_env(context.blob_service)).ensure()
        self._slots, self._python, self._niceness = slots, python, niceness
        self._project_limit = context.project_limit

    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle:
        job_dir = self._layout.job_dir(spec.name)
        state = self._layout.state(spec.name)
        handle = self._handle(spec.name, spec.output, self._context.clock())
        (job_dir / "state").mkdir(parents=True, exist_ok=True)
        # One submission at a time per job, across threads and processes: a
        # concurrent duplicate waits, then binds to what the first one made.
        with file_lock(job_dir / "submit.lock"):
            existing = read_json(job_dir / "spec.json")
            if existing is not None and not spec.is_same_submission(existing.get("fingerprint")):
                raise TerminalBackendError(
                    f"A different local job named {spec.name!r} already exists", backend=self.name
                )
            if (state / "ready").exists():
                # A repeat: bind to the job that exists (queued again if a host stopped before queueing it).
                self._layout.requeue_lost(spec.name, spec.labels.get("project", ""))
            else:
                ended = read_json(state / "exit.json")
                if ended is not None and ended.get("stage") != STAGING_FAILED:
                    return handle  # cancelled before its inputs were staged: it stays cancelled
                (state / "exit.json").unlink(missing_ok=True)  # an earlier staging failed: stage again
                self._prepare(spec)
                (state / "ready").touch()
                self._layout.join_queue(spec.name, spec.labels.get("project", ""))
        self._admit()
        return handle

    def _prepare(self, spec: ComputeJobSpec) -> None:
        """Write the spec and stage the inputs (again, after a crash: staging overwrites)."""
        write_json(
            self._layout.job_dir(spec.name) / "spec.json",
            {
                "jobId": spec.job_id,
                "argv": list(spec.argv),
                "env": dict(spec.env),
                "timeLimitS": spec.time_limit_s,
                "niceness": self._niceness,
                "fingerprint": spec.fingerprint(),
                "output": spec.output.model_dump(by_alias=True),
                "submittedAt": self._context.clock().isoformat(),
            },
        )
        work = self._layout.work(spec.name)
        for folder in ("inputs", "outputs", "logs"):
            (work / folder).mkdir(parents=True, exist_ok=True)
        try:
            try:
                for item in spec.inputs:
                    self._stage(item, work / "inputs")
            except ResourceNotFoundError as exc:
                raise TerminalBackendError(
                    f"an input is missing: {describe_exception(exc)}", backend=self.name
                ) from exc
            except AzureError as exc:
                raise TransientBackendError(
                    f"staging inputs failed: {describe_exception(exc)}", backend=self.name
                ) from exc
        except HasteError as exc:
            # The job ended before it started: say why on disk, so nothing lists it as running.
            self._record_exit(spec.name, str(exc), stage=STAGING_FAILED)
            raise

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        name = self._name(handle)
        state = self._layout.state(name)
        if not state.exists():
            return ComputeStatus(state=ComputeState.FAILED, reason="the local job's files are gone")
        ended = read_json(state / "exit.json")
        if ended is None and not (state / "ready").exists():
            return ComputeStatus(state=ComputeState.QUEUED, detail="staging inputs")
        workload = self._layout.active_pid(name)
        if ended is None and not (workload and pid_alive(workload)):
            # Admission starts it if a slot is free, or records its end if its workload is gone
            # without a record; under the scheduler's lock, so a job being started waits for it.
            # A staged job that is neither waiting nor started lost its place when a host stopped
            # between staging and queueing it: queued again first (under the job's submit lock).
            if not self._layout.is_waiting(name):  # a waiting job (the common case) skips both locks
                with file_lock(self._layout.job_dir(name) / "submit.lock"):
                    self._layout.requeue_lost(name, self._layout.project_of(name))
            self._admit()
            ended = read_json(state / "exit.json")
            workload = self._layout.active_pid(name)
        if ended is not None:
            return self._ended_status(name, ended)
        if self._layout.is_waiting(name):
            project = self._layout.project_of(name)
            held = limit_reason(project, self._layout.running_per_project()[project], self._project_limit)
            if held:
                return ComputeStatus(
                    state=ComputeState.QUEUED, detail=f"waiting: {held}", capacity=CapacityWait(reason=held)
                )
            busy = "the 1 local slot is busy" if self._slots == 1 else f"all {self._slots} local slots are busy"
            wait = CapacityWait(reason=busy)
            return ComputeStatus(state=ComputeState.QUEUED, detail="waiting for a free local slot", capacity=wait)
        # A live workload in its slot is running, even if the host that started it stopped before it
        # wrote running.json (otherwise a running job would look queued, and could be moved on).
        started = (state / "running.json").exists() or (workload is not None and pid_alive(workload))
        if not started:
            return ComputeStatus(state=ComputeState.QUEUED)
        return ComputeStatus(state=ComputeState.RUNNING, usage=self._running_usage(name))

    def collect_outputs(self, handle: ComputeJobHandle) -> None:
        """Upload ``outputs/**`` and ``logs/**`` of an ended job once; a crash midway simply uploads again.

        Raises:
            TransientBackendError: storage stayed unavailable past the transfer budget.
        """
        name = self._name(handle)
        state = self._layout.state(name)
        if not (state / "exit.json").exists() or (state / "uploaded").exists():
            return  # not ended (or its files are gone), or uploaded already
        work = self._layout.work(name)
        container = self._blobs.get_container_client(handle.output.container)
        # Across processes: the host's workers may hold two deliveries of one job, and the one that uploads
        # first goes on to clean the files up.
        with file_lock(state / "upload.lock"):
            if (state / "uploaded").exists():
                return  # another delivery uploaded it while this one waited
            files = [
                (path, handle.output.child(path.relative_to(work).as_posix()))
                for folder in ("outputs", "logs")
                for path in sorted((work / folder).rglob("*"))
                if path.is_file() and (folder == "outputs" or path.stat().st_size)  # an empty log tells nobody anything
            ]
            try:
                upload(container, files)
            except AzureError as exc:
                raise TransientBackendError(
                    f"uploading outputs failed: {describe_exception(exc)}", backend=self.name
                ) from exc
            (state / "uploaded").touch()

    def read_output(self, handle: ComputeJobHandle, path: str) -> OutputRead:
        """The file from the job's working directory (this machine); no data when it is not there."""
        return OutputRead(data=self.read_output_tail(handle, path, 0, limit=-1))

    def read_output_tail(
        self, handle: ComputeJobHandle, path: str, offset: int, limit: int = TAIL_MAX_BYTES
    ) -> bytes | None:
        """The file's bytes from ``offset`` on (at most ``limit``; -1: all), or None if it does not exist."""
        work = self._layout.work(self._name(handle)).resolve()
        target = (work / path).resolve()
        if not target.is_relative_to(work):
            return None
        try:
            with target.open("rb") as handle_file:
                handle_file.seek(offset)
                return handle_file.read(limit)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def cancel(self, handle: ComputeJobHandle) -> None:
        name = self._name(handle)
        state = self._layout.state(name)
        if not state.exists() or (state / "exit.json").exists():
            return
        (state / "cancel").touch()
        with self._layout.scheduler_lock():  # not while admission starts it: it would run unseen
            if self._layout.dequeue(name):
                self._record_exit(name, "cancelled")
                self._nudge((read_json(self._layout.job_dir(name) / "spec.json") or {}).get("jobId"))
                return
            workload = self._layout.active_pid(name)
        if workload is not None:  # its process records the cancellation (or, if it cannot, the host)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(workload, signal.SIGTERM)

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        """(job id, handle) of every local job that has not ended, for the reconciler."""
        active = []
        for job_dir in sorted((self._layout.root / "jobs").iterdir()):
            spec = read_json(job_dir / "spec.json")
            if spec is None or (job_dir / "state" / "exit.json").exists() or "output" not in spec:
                continue
            submitted_at = datetime.fromisoformat(spec["submittedAt"])
            handle = self._handle(job_dir.name, BlobLocation.model_validate(spec["output"]), submitted_at)
            active.append((str(spec["jobId"]), handle))
        return active

    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> None:
        """Delete the working directory once its files are safely in blob; keep the state."""
        name = self._name(handle)
        if (self._layout.state(name) / "uploaded").exists():
            shutil.rmtree(self._layout.work(name), ignore_errors=True)

    def _record_exit(self, name: str, reason: str, **stage: str) -> None:
        self._layout.record_exit(name, None, reason, endedAt=self._context.clock().isoformat(), **stage)

    def _admit(self) -> None:
        """Admit waiting jobs; each workload started here is reaped by a thread of this process."""
        for launched in self._layout.admit(self._slots, self._python, self._project_limit):
            pid = launched.process.pid
            threading.Thread(target=self._reap, args=(launched,), name=f"local-{pid}", daemon=True).start()

    def _reap(self, launched: Launched) -> None:
        """Wait for a workload this process started; record its end if it could not; nudge; admit the next.

        The nudge comes as soon as the workload says its record is written (:func:`recorded`),
        while it is still shutting down; else once it is gone. The next workload waits for the
        slot to be free: for the process to be gone.

        ``waitid(WNOWAIT)`` leaves the exited process a zombie, which counts as alive, until
        the record is written: no status call in between takes it for one that vanished.
        """
        name, process = launched.name, launched.process
        spec = read_json(self._layout.job_dir(name) / "spec.json") or {}
        nudged = launched.notice is not None and recorded(process.pid, launched.notice)
        if nudged:
            self._nudge(spec.get("jobId"))
        ended = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        state = self._layout.state(name)
        if ended is not None and not (state / "exit.json").exists():
            code = ended.si_status if ended.si_code == os.CLD_EXITED else -ended.si_status
            reason = None
            if code < 0:  # nothing of a killed workload outlives it
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                reason = (
                    time_limit_reason(spec)
                    if code == -signal.SIGALRM  # the interval timer a command keeps across exec (see local_node.run)
                    else f"the workload was killed by {signal.Signals(-code).name}"
                )
            self._layout.record_exit(name, code, reason)
        process.wait()
        if not nudged:
            self._nudge(spec.get("jobId"))
        self._admit()

    def _nudge(self, job_id: str | None) -> None:
        """Tell the pipeline the job ended, so it looks now rather than at its next poll."""
        try:
            self._context.notify_exit(str(job_id))
        except Exception as exc:  # polling still finds the end; a nudge is an optimisation
            log.warning(
                "could not nudge the pipeline for job %s (%s); its poll chain finds the end",
                job_id,
                describe_exception(exc),
            )

    def _handle(self, name: str, output: BlobLocation, submitted_at: datetime) -> ComputeJobHandle:
        return ComputeJobHandle(
            backend=self.name, provider_ids={"name": name}, output=output, submitted_at=submitted_at
        )

    def _name(self, handle: ComputeJobHandle) -> str:
        name = handle.provider_ids.get("name", "")
        if not name or "/" in name or name.startswith("."):
            raise TerminalBackendError(f"Not a local job handle: {handle.provider_ids}", backend=self.name)
        return name

    def _stage(self, item: InputFile, inputs: Path) -> None:
        container = self._blobs.get_container_client(item.source.container)
        if not item.is_prefix:
            download(container.get_blob_client(item.source.path), inputs / item.dest)
            return
        prefix = item.source.path.rstrip("/") + "/"
        if not download_prefix(container, prefix, inputs / item.dest, strip=prefix):
            raise TerminalBackendError(
                f"an input is missing: nothing under {item.source.container}/{prefix}", backend=self.name
            )

    def _ended_status(self, name: str, ended: dict[str, object]) -> ComputeStatus:
        status = self._ended_state(name, ended)
        return status.model_copy(update={"usage": self._usage(name, ended)})

    def _usage(self, name: str, ended: dict[str, object]) -> Usage:
        """The one run of an ended job, on one slot (none: it ended before it started)."""
        running = read_json(self._layout.state(name) / "running.json") or {}
        start, end = running.get("startedAt"), ended.get("endedAt")
        if not isinstance(start, str) or not isinstance(end, str):
            return Usage(count=0)
        started, finished = datetime.fromisoformat(start), datetime.fromisoformat(end)
        return Usage.ended(LocalAttempt(slots=1, started_at=started, ended_at=max(started, finished)))

    def _running_usage(self, name: str) -> Usage | None:
        """The run so far of a running job (its cost so far counts against its project's budget)."""
        start = (read_json(self._layout.state(name) / "running.json") or {}).get("startedAt")
        if not isinstance(start, str):
            return None
        started = datetime.fromisoformat(start)
        attempt = LocalAttempt(slots=1, started_at=started, ended_at=max(started, self._context.clock()))
        return Usage(runs=(Run(attempt=attempt, open=True),), count=1)

    def _ended_state(self, name: str, ended: dict[str, object]) -> ComputeStatus:
        code = ended.get("exitCode")
        exit_code = code if isinstance(code, int) else None
        reason = ended.get("reason")
        if ended.get("cancelled"):
            return ComputeStatus(state=ComputeState.CANCELLED, exit_code=exit_code, reason="cancelled")
        if exit_code == 0 and not reason:
            return ComputeStatus(state=ComputeState.SUCCEEDED, exit_code=0)
        head = str(reason) if reason else f"the workload exited with code {exit_code}"
        return ComputeStatus(
            state=ComputeState.FAILED, exit_code=exit_code, reason=with_stderr(head, self._stderr(name))
        )

    def _stderr(self, name: str) -> str | None:
        """The end of the job's stderr (at most :data:`TAIL_BYTES`), or None when there is none."""
        path = self._layout.work(name) / "logs" / "stderr.txt"
        try:
            with path.open("rb") as log_file:
                log_file.seek(max(0, path.stat().st_size - TAIL_BYTES))
                return log_file.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None


def create(context: BackendContext) -> LocalBackend:
    """The production factory (the registry imports it lazily).

    Raises:
        ConfigurationError: inside Azure Functions, unless HASTE_LOCAL_ALLOW_IN_AZURE=true: workloads
            would run as processes on the Functions instance itself.
    """
    settings = context.section(LocalSettings)
    refusal = settings.refusal()
    if refusal:
        raise ConfigurationError(f"The local backend refuses to start: {refusal}")
    root = Path(settings.root) if settings.root else Path(tempfile.gettempdir()) / "haste-local"
    slots = settings.slots or os.cpu_count() or 1
    python = settings.python or sys.executable
    return LocalBackend(context, root, slots, python, settings.niceness)


def recorded(pid: int, notice: int) -> bool:
    """Wait until the workload ``pid`` says on ``notice`` that its exit record is written (True), or until it
    ends without saying so (False). Closes ``notice``.

    The workload's process is watched too (a pidfd): a child it forked holds the pipe open past its end,
    so the pipe's closing alone cannot tell that it ended. Where there is no pidfd (not Linux) it says
    False at once, and the caller waits for the process as it always did.
    """
    try:
        try:
            gone = os.pidfd_open(pid)
        except (AttributeError, OSError):
            return False
        try:
            watch = select.poll()  # not select(): a busy host's descriptors run past its 1,024
            watch.register(notice, select.POLLIN)
            watch.register(gone, select.POLLIN)
            ready = {fd for fd, _ in watch.poll()}
            # Nothing to read (EOF) when the workload replaced itself (exec) or ended without a word.
            return notice in ready and os.read(notice, 1) == NOTICE
        finally:
            os.close(gone)
    finally:
        os.close(notice)
