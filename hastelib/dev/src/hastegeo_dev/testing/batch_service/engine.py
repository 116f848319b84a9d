"""Jobs and tasks of the Batch test service, and the runner that really executes each task.

A task runs as a local process in its own task directory (``<root>/<node>/<job>/<task>/`` with ``wd/``,
``stdout.txt``, ``stderr.txt``). Its resource files are staged from Azurite and its ``OutputFile``s are
uploaded to Azurite when it ends, as Batch does. The container image is recorded, not run (no Docker
here): ``python`` on the task's PATH is this interpreter.
"""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from hastegeo.compute.transfer import download, download_prefix, upload
from hastegeo.utils.errors import describe_exception
from hastegeo_dev.testing.batch_service.faults import Faults
from hastegeo_dev.testing.batch_service.slots import PoolSlots
from hastegeo_dev.testing.node import process_env, python_shim, stop_with_notice, wait_for_output

_WALL_CLOCK = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")
DEFAULT_WALL_CLOCK_S = 7 * 86400.0


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def duration_s(value: str | None, default: float = DEFAULT_WALL_CLOCK_S) -> float:
    match = _WALL_CLOCK.fullmatch(value or "")
    if not value or not match:
        return default
    days, hours, minutes, seconds = (float(part or 0) for part in match.groups())
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


def pool_of(job: Job) -> str:
    return str((job.body.get("poolInfo") or {}).get("poolId") or "")


@dataclass
class Job:
    body: dict[str, Any]
    state: str = "active"
    created: str = field(default_factory=now_iso)
    terminate_reason: str | None = None
    tasks: dict[str, Task] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.body["id"])


@dataclass
class Task:
    job_id: str
    body: dict[str, Any]
    state: str = "active"
    created: str = field(default_factory=now_iso)
    transitioned: str = field(default_factory=now_iso)
    exit_code: int | None = None
    result: str | None = None
    failure: dict[str, Any] | None = None
    retry_count: int = 0
    requeue_count: int = 0
    runs: int = 0  # processes started for this task (a preempted task runs again)
    start_time: str | None = None  # the latest run's, as Batch reports it
    end_time: str | None = None
    last_requeue_time: str | None = None
    last_retry_time: str | None = None
    node_id: str | None = None
    task_dir: Path | None = None
    node_not_ready_left: int | None = None  # set when the node was lost: NodeNotReady countdown, then gone
    process: subprocess.Popen[bytes] | None = None
    kill_reason: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def id(self) -> str:
        return str(self.body["id"])

    def move(self, state: str) -> None:
        self.state, self.transitioned = state, now_iso()


class Engine:
    """Holds every job and task under one lock; runs tasks on threads."""

    def __init__(
        self, root: Path, blob_service: Any | None, faults: Faults, storage_connection_string: str | None = None
    ) -> None:
        self.root = root
        self.storage_connection_string = storage_connection_string
        self.blob_service = blob_service
        self.faults = faults
        self.lock = threading.RLock()
        self.jobs: dict[str, Job] = {}
        self._nodes = itertools.count(1)
        self.slots = PoolSlots()  # pools of fixed size: tasks take their slots first come, first served
        self._threads: list[threading.Thread] = []
        self._shim = python_shim(root / "bin")  # "python" in a task's command is this interpreter

    # -- lifecycle ---------------------------------------------------------------------

    def start_task(self, job: Job, task: Task) -> None:
        thread = threading.Thread(target=self._run, args=(job, task), daemon=True, name=f"batch-task-{task.id}")
        self._threads.append(thread)
        thread.start()

    def stop(self) -> None:
        with self.lock:  # every task at once: a waiting one must not take the slot a killed one freed
            for task in [task for job in self.jobs.values() for task in job.tasks.values()]:
                self.kill(task, "service stopped")
        for thread in self._threads:
            thread.join(timeout=5)

    def kill(self, task: Task, reason: str) -> None:
        with self.lock:
            task.kill_reason = task.kill_reason or reason
            process = task.process
        if process is not None and process.poll() is None:
            process.kill()

    def maybe_complete_job(self, job: Job) -> None:
        """``terminatejob``: the job completes once every task has (a job with no tasks counts as complete)."""
        with self.lock:
            if job.state != "active" or job.body.get("onAllTasksComplete", "noaction").lower() != "terminatejob":
                return
            if all(task.state == "completed" for task in job.tasks.values()):
                job.state, job.terminate_reason = "completed", "AllTasksComplete"

    # -- running a task ----------------------------------------------------------------

    def _run(self, job: Job, task: Task) -> None:
        pool = pool_of(job)
        ticket: tuple[int, threading.Event] | None = None  # its place in a sized pool's line
        while True:
            time.sleep(0.02)  # scheduling
            with self.lock:
                if job.state != "active" or task.kill_reason:  # a terminated job leaves active tasks active
                    if task.kill_reason and task.state != "completed":
                        self.complete(job, task, None, "TaskEnded", f"The task was terminated: {task.kill_reason}")
                    if ticket is not None:
                        self.slots.leave(pool, ticket[0], held=False)
                    task.done.set()
                    return
                if self.faults.capacity_refusal(pool) is not None:
                    continue  # no node for it: the task stays active
                if pool in self.slots.sizes:
                    ticket = ticket or self.slots.join(pool, int(job.body.get("priority") or 0))
                    waiting = not self.slots.take(pool, ticket[0])
                else:
                    waiting, ticket = False, None
            if waiting and ticket is not None:
                ticket[1].wait(1.0)  # woken when first in line with a slot free; else looks again
                ticket[1].clear()
                continue
            with self.lock:
                task.node_id = f"tvm-{next(self._nodes):04d}"
                task.task_dir = self.root / task.node_id / job.id / task.id
                task.move("running")
                task.start_time = now_iso()  # Batch reports the latest run's start
            outcome = self._attempt(job, task)
            if ticket is not None:
                with self.lock:
                    self.slots.leave(pool, ticket[0], held=True)
                ticket = None
            if outcome is None:  # requeued after preemption
                continue
            code, failure_code, message = outcome
            max_retries = int((task.body.get("constraints") or {}).get("maxTaskRetryCount") or 0)
            if failure_code is None and code not in (None, 0) and (max_retries < 0 or task.retry_count < max_retries):
                with self.lock:
                    task.retry_count += 1
                    task.last_retry_time = now_iso()
                continue
            with self.lock:
                self.complete(job, task, code, failure_code, message)
            self.maybe_complete_job(job)
            task.done.set()
            return

    def _attempt(self, job: Job, task: Task) -> tuple[int | None, str | None, str | None] | None:
        """One run: (exit code, failure code, message), or None when the node was preempted under it."""
        assert task.task_dir is not None
        workdir = task.task_dir / "wd"
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._stage(task.body.get("resourceFiles") or [], workdir)
        except Exception as exc:
            return None, "BlobDownloadMiscError", f"A resource file could not be downloaded: {describe_exception(exc)}"
        preempt = self.faults.take_preemption(job.id, pool_of(job))
        env = self._environment(job, task, workdir)
        argv = shlex.split(str(task.body.get("commandLine") or ""))
        with (task.task_dir / "stdout.txt").open("ab") as out, (task.task_dir / "stderr.txt").open("ab") as err:
            try:
                process = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            except OSError as exc:
                return None, "CommandProgramNotFound", f"The task could not start: {exc.strerror or exc}"
            with self.lock:
                task.process = process
                task.runs += 1
                if task.kill_reason:
                    process.kill()
            limit = duration_s((task.body.get("constraints") or {}).get("maxWallClockTime"))
            watch = None if preempt else self.faults.take_preempt_on(job.id)
            try:
                if watch is not None:
                    code = wait_for_output(process, workdir / watch.path, watch.text, limit)
                    preempt = code is None
                    code = stop_with_notice(process, watch.notice_s) if code is None else code
                else:
                    code = process.wait(timeout=self.faults.preempt_after_s if preempt else limit)
                timed_out = False
            except subprocess.TimeoutExpired:
                process.kill()
                code, timed_out = process.wait(), not preempt
        if preempt:  # the node vanished under the task: requeue it, its files are gone with the node
            shutil.rmtree(task.task_dir, ignore_errors=True)
            with self.lock:
                task.requeue_count += 1
                task.last_requeue_time = now_iso()
                task.process = None
                task.move("active")
            return None
        if timed_out:
            result: tuple[int | None, str | None, str | None] = (
                code,
                "MaxWallClockTimeExpiry",
                "The task exceeded its maximum wall clock time and was terminated.",
            )
        elif task.kill_reason:
            result = (code, "TaskEnded", f"The task was terminated: {task.kill_reason}")
        else:
            result = (code, None, None)
        upload_error = self._upload(task, workdir, success=result[0] == 0 and result[1] is None)
        if upload_error and result[1] is None:
            result = (result[0], "FileUploadError", upload_error)
        return result

    def complete(self, job: Job, task: Task, code: int | None, failure_code: str | None, message: str | None) -> None:
        task.exit_code = code
        task.end_time = now_iso()
        task.process = None
        failed = failure_code is not None or code not in (None, 0)
        task.result = "failure" if failed else "success"
        if failed:
            task.failure = {
                "category": "usererror",
                "code": failure_code or "FailureExitCode",
                "message": message or "The task exited with an exit code representing a failure",
            }
        task.move("completed")
        lost = self.faults.take_node_loss(job.id)
        if lost is not None and task.task_dir is not None:
            task.node_not_ready_left = lost
            shutil.rmtree(task.task_dir, ignore_errors=True)

    def _environment(self, job: Job, task: Task, workdir: Path) -> dict[str, str]:
        assert task.task_dir is not None
        variables = {
            "AZ_BATCH_TASK_WORKING_DIR": str(workdir),
            "AZ_BATCH_TASK_DIR": str(task.task_dir),
            "AZ_BATCH_JOB_ID": job.id,
            "AZ_BATCH_TASK_ID": task.id,
            "AZ_BATCH_NODE_ID": task.node_id or "",
            "AZ_BATCH_POOL_ID": str((job.body.get("poolInfo") or {}).get("poolId") or ""),
            "AZ_BATCH_TASK_RETRY_COUNT": str(task.retry_count),
        }
        for item in task.body.get("environmentSettings") or []:
            variables[str(item["name"])] = str(item.get("value") or "")
        return process_env(self._shim, variables, self.storage_connection_string)  # the pool's identity, played

    # -- storage -----------------------------------------------------------------------

    def _stage(self, resource_files: list[dict[str, Any]], workdir: Path) -> None:
        for item in resource_files:
            if not item.get("identityReference") and "sig=" not in str(item):
                raise PermissionError("no identityReference and no SAS: the node cannot read the blob")
            target = workdir / str(item.get("filePath") or "")
            if item.get("httpUrl"):
                container, blob = self._split_blob_url(str(item["httpUrl"]))
                target = target if item.get("filePath") else workdir / Path(blob).name
                download(self._require_blobs().get_blob_client(container, blob), target)
            elif item.get("storageContainerUrl"):
                container, _ = self._split_blob_url(str(item["storageContainerUrl"]) + "/")
                client = self._require_blobs().get_container_client(container)
                download_prefix(client, item.get("blobPrefix") or None, target)  # Batch keeps full blob names
            else:
                raise ValueError(f"unsupported resource file {sorted(item)}")

    def _upload(self, task: Task, workdir: Path, *, success: bool) -> str | None:
        errors = []
        for item in task.body.get("outputFiles") or []:
            condition = str((item.get("uploadOptions") or {}).get("uploadCondition") or "").lower()
            if (condition == "tasksuccess" and not success) or (condition == "taskfailure" and success):
                continue
            destination = (item.get("destination") or {}).get("container") or {}
            try:
                if not destination.get("identityReference") and "sig=" not in str(destination.get("containerUrl")):
                    raise PermissionError("no identityReference and no SAS: the node cannot write the blob")
                container, _ = self._split_blob_url(str(destination["containerUrl"]).rstrip("/") + "/")
                files = match_outputs(workdir, str(item["filePattern"]), str(destination.get("path") or ""))
                upload(self._require_blobs().get_container_client(container), files)
            except Exception as exc:
                errors.append(f"{item.get('filePattern')}: {exc}")
        return "; ".join(errors) or None

    def _split_blob_url(self, url: str) -> tuple[str, str]:
        """``http://127.0.0.1:port/account/container/a/b`` → (container, ``a/b``), for our Azurite only."""
        parts = urlsplit(url)
        ours = urlsplit(str(self._require_blobs().url))
        if parts.netloc != ours.netloc:
            raise PermissionError(f"{parts.netloc} is not the storage account this service can reach")
        segments = [unquote(segment) for segment in parts.path.split("/")[1:]]
        account = getattr(self.blob_service, "account_name", None)
        if len(segments) > 1 and segments[0] == account and not (parts.hostname or "").startswith(f"{account}."):
            segments = segments[1:]  # path-style (emulator) URL: the account is the first segment
        return segments[0], "/".join(segments[1:])

    def _require_blobs(self) -> Any:
        if self.blob_service is None:
            raise RuntimeError("the Batch test service was started without an Azurite connection string")
        return self.blob_service


def match_outputs(workdir: Path, pattern: str, path: str) -> list[tuple[Path, str]]:
    """Files matching a Batch ``filePattern`` (relative to the working dir) and their blob names.

    Without a wildcard, ``path`` is the blob name; with one, it is a prefix and each file keeps its
    path relative to the pattern's wildcard-free base directory.
    """
    segments = pattern.split("/")
    base_parts: list[str] = []
    for segment in segments:
        if set(segment) & set("*?["):
            break
        base_parts.append(segment)
    base = (workdir / "/".join(base_parts)).resolve() if base_parts else workdir.resolve()
    if len(base_parts) == len(segments):
        return [(base, path)] if base.is_file() else []
    regex = re.compile(_glob_regex("/".join(segments[len(base_parts) :])))
    found = []
    for file in sorted(base.rglob("*")) if base.is_dir() else []:
        relative = file.relative_to(base).as_posix()
        if file.is_file() and regex.fullmatch(relative):
            found.append((file, f"{path.rstrip('/')}/{relative}" if path else relative))
    return found


def _glob_regex(pattern: str) -> str:
    out, index = "", 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out, index = out + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            out, index = out + ".*", index + 2
        elif pattern[index] == "*":
            out, index = out + "[^/]*", index + 1
        elif pattern[index] == "?":
            out, index = out + "[^/]", index + 1
        else:
            out, index = out + re.escape(pattern[index]), index + 1
    return out
