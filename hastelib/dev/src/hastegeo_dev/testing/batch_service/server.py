"""The Batch test service: the REST subset (api-version 2025-06-01) the adapter uses, over jobs and tasks.

Shared-key signatures are verified, success codes are the service's (create 201, get 200,
update 200, terminate job 202, terminate task 204, delete file 200), errors carry Batch's
body ``{"code", "message": {"lang", "value"}, "values"}`` and file listings page by
``odata.nextLink``. Every request is counted per job, faulted or not.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlencode

from hastegeo.workloads.registry import workload_names
from hastegeo_dev.testing.batch_service.engine import Engine, Job, Task, now_iso, pool_of
from hastegeo_dev.testing.batch_service.faults import NODE_NOT_FOUND, NODE_NOT_READY, Faults
from hastegeo_dev.testing.batch_service.handler import API_VERSION, Answer, BatchError, Handler


class BatchTestService:
    """A Batch-compatible service on 127.0.0.1 that runs tasks as local processes.

    ``BatchTestService(azurite_connection_string).start()`` → ``.url``, ``.account_name``,
    ``.account_key``; ``.faults`` scripts failures; ``.calls(job_id)`` counts requests per job.
    """

    def __init__(
        self,
        azurite_connection_string: str | None = None,
        *,
        account_name: str = "hastetest",
        account_key: str | None = None,
        port: int = 0,
        root: str | None = None,
        page_size: int = 1000,
    ) -> None:
        self.account_name = account_name
        self.account_key = account_key or base64.b64encode(os.urandom(32)).decode("ascii")
        self.faults = Faults()
        self.page_size = page_size
        self._port = port
        self._tempdir = (
            None if root else tempfile.TemporaryDirectory(prefix="batch-service-", ignore_cleanup_errors=True)
        )
        self._root = Path(root or (self._tempdir.name if self._tempdir else "."))
        blobs = None
        if azurite_connection_string:
            from azure.storage.blob import BlobServiceClient

            blobs = BlobServiceClient.from_connection_string(azurite_connection_string)
        self.engine = Engine(self._root, blobs, self.faults, azurite_connection_string)
        self.pool_shapes: dict[str, PoolShape] = {}
        self.spot_nodes: set[str] = set()  # in a mixed pool, the nodes that are spot (the rest are dedicated)
        self._calls: dict[str, Counter[str]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def shape_pool(
        self,
        pool_id: str,
        *,
        vm_size: str = "standard_d2s_v3",
        slots_per_node: int = 1,
        low_priority: bool = False,
        mixed: bool = False,
    ) -> BatchTestService:
        """What ``pool_id`` reports it is made of (default: one-slot dedicated ``standard_d2s_v3`` nodes).

        ``mixed``: dedicated and spot nodes both; each node says which it is (:attr:`spot_nodes` are spot).
        """
        with self.engine.lock:
            self.pool_shapes[pool_id] = PoolShape(vm_size, slots_per_node, low_priority, mixed)
        return self

    def preempt_spot(self, pool_id: str, times: int = 1, *, after_s: float | None = None) -> BatchTestService:
        """The spot pool ``pool_id`` takes back the node of its next ``times`` runs: each task is requeued.

        Raises:
            ValueError: the pool was not shaped with spot (low-priority) nodes: dedicated nodes are not preempted.
        """
        with self.engine.lock:
            spot = self.pool_shapes.get(pool_id, PoolShape()).low_priority
        if not spot:
            raise ValueError(f"pool {pool_id!r} has dedicated nodes (shape_pool(..., low_priority=True) for spot)")
        self.faults.preempt(times, after_s=after_s, pool_id=pool_id)
        return self

    def jobs_on(self, pool_id: str) -> list[str]:
        """The ids of the jobs created on pool ``pool_id``, oldest first."""
        with self.engine.lock:
            return [job.id for job in self.engine.jobs.values() if pool_of(job) == pool_id]

    def size_pool(self, pool_id: str, slots: int) -> BatchTestService:
        """Give ``pool_id`` ``slots`` task slots: its tasks wait for one, taken first come, first served
        (jobs of a higher priority first), as Batch schedules a pool's tasks."""
        with self.engine.lock:
            self.engine.slots.sizes[pool_id] = slots
        return self

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> BatchTestService:
        service = self

        class BoundHandler(Handler):
            owner = service

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), BoundHandler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="batch-test-service"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.engine.stop()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> BatchTestService:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- inspection --------------------------------------------------------------------

    def settings(self, workloads: tuple[str, ...] | None = None) -> dict[str, str]:
        """The BATCH_* settings that point the Azure Batch backend at this service (default: every workload)."""
        workloads = workload_names() if workloads is None else workloads
        return {
            "BATCH_ACCOUNT_URL": self.url,
            "BATCH_AUTH_MODE": "shared_key",
            "BATCH_ACCOUNT_NAME": self.account_name,
            "BATCH_ACCOUNT_KEY": self.account_key,
            "BATCH_POOLS": ",".join(f"{w}=haste-cpu" for w in workloads),
            "BATCH_IMAGES": ",".join(f"{w}=haste/geo:dev" for w in workloads),
            "BATCH_IDENTITY_RESOURCE_ID": (
                "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/dev"
                "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/haste-pools"
            ),
        }

    def calls(self, job_id: str) -> Counter[str]:
        """Requests received per operation for ``job_id`` (faulted ones included)."""
        with self.engine.lock:
            return Counter(self._calls.get(job_id, Counter()))

    def count(self, op: str, job_id: str | None) -> None:
        with self.engine.lock:
            self._calls.setdefault(job_id or "", Counter())[op] += 1

    def lose_node(self, job_id: str) -> BatchTestService:
        """The node running ``job_id``'s task is lost now: its file APIs answer 404 NodeNotFound from here on.

        The task's state comes from the service and stays true; its run carries on to its end (as the run
        Batch requeues elsewhere would) and its output files are uploaded then.
        """
        with self.engine.lock:
            for task in self.engine.jobs[job_id].tasks.values():
                task.node_not_ready_left = 0
        return self

    def task(self, job_id: str, task_id: str) -> Task:
        with self.engine.lock:
            return self.engine.jobs[job_id].tasks[task_id]

    def wait_task(self, job_id: str, task_id: str, timeout: float = 30.0) -> Task:
        """Block (bounded) until the task has completed."""
        task = self.task(job_id, task_id)
        if not task.done.wait(timeout):
            raise TimeoutError(f"task {job_id}/{task_id} did not complete in {timeout}s")
        return task

    # -- operations --------------------------------------------------------------------

    def handle(self, op: str, params: dict[str, str], query: dict[str, str], body: Any, headers: Any) -> Answer:
        job_id = params.get("job")
        engine = self.engine
        if op == "create_job":
            with engine.lock:
                if not isinstance(body, dict) or not body.get("id"):
                    raise BatchError(400, "InvalidRequestBody", "The request body must be a job with an id.")
                if body["id"] in engine.jobs:
                    raise BatchError(409, "JobExists", "The specified job already exists.")
                engine.jobs[body["id"]] = Job(body)
            return Answer(201, headers={"DataServiceId": f"{self.url}/jobs/{body['id']}"})
        if op == "list_jobs":
            return self._list_jobs(query)
        if op == "get_pool":
            return Answer(200, self._pool_json(params["pool"]))
        if op == "get_node":
            return Answer(200, self._node_json(params["pool"], params["node"]))
        with engine.lock:
            job = engine.jobs.get(job_id or "")
            if job is None:
                raise BatchError(404, "JobNotFound", "The specified job does not exist.")
        if op == "get_job":
            return Answer(200, self._job_json(job))
        if op == "update_job":
            with engine.lock:
                if job.state != "active":
                    raise BatchError(
                        409, "JobCompleted" if job.state == "completed" else "JobNotActive", "The job is not active."
                    )
                job.body.update({k: v for k, v in (body or {}).items() if v is not None})
            engine.maybe_complete_job(job)
            return Answer(200)
        if op == "terminate_job":
            return self._terminate_job(job, (body or {}).get("terminateReason") or "UserTerminate")
        if op == "create_task":
            with engine.lock:
                if job.state != "active":
                    code = "JobCompleted" if job.state == "completed" else "JobNotActive"
                    raise BatchError(409, code, "The job is not active.")
                if body["id"] in job.tasks:
                    raise BatchError(409, "TaskExists", "The specified task already exists.")
                task = job.tasks[body["id"]] = Task(job.id, body)
            engine.start_task(job, task)
            return Answer(201, headers={"DataServiceId": f"{self.url}/jobs/{job.id}/tasks/{task.id}"})
        with engine.lock:
            task_or_none = job.tasks.get(params.get("task", ""))
            if task_or_none is None:
                raise BatchError(404, "TaskNotFound", "The specified task does not exist.")
            task = task_or_none
        if op == "get_task":
            return Answer(200, self._task_json(job, task))
        if op == "terminate_task":
            with engine.lock:
                if task.state == "completed":
                    raise BatchError(409, "TaskCompleted", "The specified task is already completed.")
                idle = task.process is None and task.state == "active" and task.done.is_set()
                if idle:  # its job was terminated before it ran: nothing will run it any more
                    engine.complete(job, task, None, "TaskEnded", "The task was terminated: user request")
            if not idle:
                engine.kill(task, "user request")
                task.done.wait(10)
            return Answer(204)
        return self._file_operation(op, job, task, params, query, headers.get("ocp-range"))

    def _terminate_job(self, job: Job, reason: str) -> Answer:
        with self.engine.lock:
            if job.state == "completed":
                raise BatchError(409, "JobCompleted", "The specified job is already in a completed state.")
            if job.state == "terminating":
                raise BatchError(409, "JobBeingTerminated", "The specified job is being terminated.")
            job.state, job.terminate_reason = "terminating", reason
            running = [task for task in job.tasks.values() if task.state in ("running", "preparing")]
        for task in running:
            self.engine.kill(task, "job terminated")
        for task in running:
            task.done.wait(10)
        with self.engine.lock:
            job.state = "completed"
        return Answer(202)

    def _file_operation(
        self, op: str, job: Job, task: Task, params: dict[str, str], query: dict[str, str], ranged: str | None = None
    ) -> Answer:
        with self.engine.lock:
            if task.node_not_ready_left is not None:
                if task.node_not_ready_left > 0:
                    task.node_not_ready_left -= 1
                    raise BatchError(409, "NodeNotReady", NODE_NOT_READY)
                raise BatchError(404, "NodeNotFound", NODE_NOT_FOUND)
            task_dir = task.task_dir
        if task_dir is None:
            raise BatchError(409, "TaskFilesUnavailable", "The task has not been scheduled on a node yet.")
        if op == "list_task_files":
            return self._list_files(job, task, task_dir, query)
        name = unquote(params["file"])
        path = (task_dir / name).resolve()
        if not path.is_relative_to(task_dir.resolve()) or not path.exists():
            raise BatchError(404, "FileNotFound", "The specified file does not exist.")
        headers = {
            "ocp-batch-file-isdirectory": str(path.is_dir()).lower(),
            "ocp-batch-file-url": f"{self.url}/jobs/{job.id}/tasks/{task.id}/files/{quote(name, safe='')}",
            "ocp-batch-file-mode": "0o100644",
            "ocp-creation-time": _http_date(path.stat().st_ctime),
            "Last-Modified": _http_date(path.stat().st_mtime),
        }
        if op == "delete_task_file":
            if path.is_dir():
                if query.get("recursive", "").lower() != "true":
                    raise BatchError(409, "DirectoryNotEmpty", "The directory is not empty; use recursive.")
                shutil.rmtree(path)
            else:
                path.unlink()
            return Answer(200)
        if path.is_dir():
            raise BatchError(409, "OperationInvalidForCurrentState", "The file is a directory.")
        data = path.read_bytes()
        headers["Content-Length-Override"] = str(len(data))
        if op == "get_task_file_properties":
            return Answer(200, headers=headers)
        if ranged is not None:  # ocp-range: bytes=start-end (end inclusive, may be past the end), answered 200
            data = byte_range(data, ranged)
        return Answer(200, headers={**headers, "Content-Type": "application/octet-stream"}, raw=data)

    def _list_files(self, job: Job, task: Task, task_dir: Path, query: dict[str, str]) -> Answer:
        recursive = query.get("recursive", "").lower() == "true"
        paths = sorted(task_dir.rglob("*") if recursive else task_dir.iterdir())
        skip = int(query.get("$skiptoken") or 0)
        size = min(int(query.get("maxresults") or self.page_size), self.page_size)
        base = f"{self.url}/jobs/{job.id}/tasks/{task.id}/files"
        page = [
            {
                "name": path.relative_to(task_dir).as_posix(),
                "url": f"{base}/{quote(path.relative_to(task_dir).as_posix(), safe='')}",
                "isDirectory": path.is_dir(),
                "properties": {
                    "lastModified": now_iso(),
                    "contentLength": 0 if path.is_dir() else path.stat().st_size,
                    "contentType": "application/octet-stream",
                },
            }
            for path in paths[skip : skip + size]
        ]
        body: dict[str, Any] = {"value": page}
        if skip + size < len(paths):
            next_query = {**query, "$skiptoken": str(skip + size), "api-version": API_VERSION}
            body["odata.nextLink"] = f"{base}?{urlencode(next_query)}"
        return Answer(200, body)

    def _list_jobs(self, query: dict[str, str]) -> Answer:
        """``GET /jobs`` with the one ``$filter`` form the adapter sends (``state eq '<state>'``) and paging."""
        wanted = re.fullmatch(r"\s*state eq '(\w+)'\s*", query.get("$filter", "")) if query.get("$filter") else None
        if query.get("$filter") and wanted is None:
            raise BatchError(400, "InvalidQueryParameterValue", "Only $filter=state eq '<state>' is supported here.")
        with self.engine.lock:
            jobs = sorted(
                (job for job in self.engine.jobs.values() if wanted is None or job.state == wanted.group(1)),
                key=lambda job: job.id,
            )
            skip = int(query.get("$skiptoken") or 0)
            size = min(int(query.get("maxresults") or self.page_size), self.page_size)
            body: dict[str, Any] = {"value": [self._job_json(job) for job in jobs[skip : skip + size]]}
        if skip + size < len(jobs):
            next_query = {**query, "$skiptoken": str(skip + size), "api-version": API_VERSION}
            body["odata.nextLink"] = f"{self.url}/jobs?{urlencode(next_query)}"
        return Answer(200, body)

    def _job_json(self, job: Job) -> dict[str, Any]:
        with self.engine.lock:
            body = {k: v for k, v in job.body.items() if k != "id"}
            return {
                **body,
                "id": job.id,
                "url": f"{self.url}/jobs/{job.id}",
                "eTag": f'"{uuid.uuid4().hex}"',
                "creationTime": job.created,
                "lastModified": job.created,
                "state": job.state,
                "stateTransitionTime": now_iso(),
                "onAllTasksComplete": job.body.get("onAllTasksComplete", "noaction"),
                "executionInfo": {
                    "startTime": job.created,
                    "poolId": (job.body.get("poolInfo") or {}).get("poolId"),
                    **({"terminateReason": job.terminate_reason} if job.terminate_reason else {}),
                    **({"endTime": now_iso()} if job.state == "completed" else {}),
                },
            }

    def _pool_json(self, pool_id: str) -> dict[str, Any]:
        """Every pool exists with one node per running task; a refused one as :meth:`Faults.refuse_capacity` set it."""
        refusal = self.faults.capacity_refusal(pool_id)
        with self.engine.lock:
            busy = sum(
                1
                for job in self.engine.jobs.values()
                if pool_of(job) == pool_id
                for task in job.tasks.values()
                if task.state == "running"
            )
        current, target = (busy or 1, busy or 1) if refusal is None else (refusal.current_nodes, refusal.target_nodes)
        shape = self.pool_shapes.get(pool_id, PoolShape())
        dedicated = (0, 0) if shape.low_priority else (current, target)
        low = (current, target) if shape.low_priority or shape.mixed else (0, 0)
        errors = [{"code": refusal.code, "message": refusal.message, "values": []}] if refusal and refusal.code else []
        stamp = now_iso()
        return {
            "id": pool_id,
            "url": f"{self.url}/pools/{pool_id}",
            "eTag": f'"{uuid.uuid4().hex}"',
            "creationTime": stamp,
            "lastModified": stamp,
            "state": "active",
            "stateTransitionTime": stamp,
            "allocationState": "resizing" if refusal and not refusal.code and current < target else "steady",
            "allocationStateTransitionTime": stamp,
            "vmSize": shape.vm_size,
            "resizeErrors": errors,
            "currentDedicatedNodes": dedicated[0],
            "currentLowPriorityNodes": low[0],
            "targetDedicatedNodes": dedicated[1],
            "targetLowPriorityNodes": low[1],
            "enableAutoScale": bool(refusal and refusal.auto_scale),
            "taskSlotsPerNode": shape.slots_per_node,
        }

    def _node_json(self, pool_id: str, node_id: str) -> dict[str, Any]:
        """A node that ran (or runs) a task of ``pool_id``; it says whether it is dedicated."""
        with self.engine.lock:
            known = any(
                task.node_id == node_id
                for job in self.engine.jobs.values()
                if pool_of(job) == pool_id
                for task in job.tasks.values()
            )
            shape = self.pool_shapes.get(pool_id, PoolShape())
        if not known:
            raise BatchError(404, "NodeNotFound", "The specified node does not exist.")
        spot = shape.low_priority or (shape.mixed and node_id in self.spot_nodes)
        return {
            "id": node_id,
            "url": f"{self.url}/pools/{pool_id}/nodes/{node_id}",
            "state": "running",
            "vmSize": shape.vm_size,
            "isDedicated": not spot,
        }

    def _task_json(self, job: Job, task: Task) -> dict[str, Any]:
        with self.engine.lock:
            info: dict[str, Any] = {"retryCount": task.retry_count, "requeueCount": task.requeue_count}
            for key, value in (
                ("startTime", task.start_time),
                ("lastRequeueTime", task.last_requeue_time),
                ("lastRetryTime", task.last_retry_time),
                ("endTime", task.end_time if task.state == "completed" else None),
                ("exitCode", task.exit_code if task.state == "completed" else None),
                ("result", task.result if task.state == "completed" else None),
                ("failureInfo", task.failure if task.state == "completed" else None),
            ):
                if value is not None:
                    info[key] = value
            answer = {
                **task.body,
                "url": f"{self.url}/jobs/{job.id}/tasks/{task.id}",
                "eTag": f'"{uuid.uuid4().hex}"',
                "creationTime": task.created,
                "lastModified": task.transitioned,
                "state": task.state,
                "stateTransitionTime": task.transitioned,
                "executionInfo": info,
            }
            if task.node_id and task.task_dir is not None:
                answer["nodeInfo"] = {
                    "nodeId": task.node_id,
                    "poolId": (job.body.get("poolInfo") or {}).get("poolId"),
                    "nodeUrl": f"{self.url}/pools/p/nodes/{task.node_id}",
                    "taskRootDirectory": f"workitems/{job.id}/job-1/{task.id}",
                }
            return answer


@dataclass(frozen=True)
class PoolShape:
    vm_size: str = "standard_d2s_v3"
    slots_per_node: int = 1
    low_priority: bool = False
    mixed: bool = False  # dedicated and spot nodes both


def _http_date(timestamp: float) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(timestamp))


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


def byte_range(data: bytes, header: str) -> bytes:
    """The bytes ``ocp-range`` asks for; 400 when malformed, 416 when it starts at or past the end."""
    match = _RANGE.fullmatch(header.strip())
    if match is None:
        raise BatchError(400, "InvalidHeaderValue", f"The value for ocp-range is not valid: {header!r}")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else len(data) - 1
    if start >= len(data) or end < start:
        raise BatchError(416, "InvalidRange", "The range specified is invalid for the current size of the resource.")
    return data[start : end + 1]
