"""A Batch task's stdout or stderr by run and byte range, from its node (docs/adr/0045).

A task that is requeued (its node preempted or lost) or retried runs again, on another node or
afresh, and its streams start again from nothing. So a read names the run it wants
(``requeueCount + retryCount`` when it started) and gets bytes only of that run: the task is
read before and after the node, and bytes read while the run changed are dropped, since they
may belong to either run. What was served is kept in the run's own blob copy
(:mod:`.logcopy`), which a later run or Batch's final upload never writes over.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from hastegeo.compute.azure_batch import logcopy, taskspec
from hastegeo.compute.azure_batch.status import enum_text
from hastegeo.compute.contract import ComputeJobHandle, StreamRead
from hastegeo.compute.logposition import run_copy
from hastegeo.compute.retry import Failed, ProviderCalls

log = logging.getLogger(__name__)

BACKEND = "azure_batch"
_ON_A_NODE = frozenset({"running", "completed"})  # states whose run has files on a node


@dataclass(frozen=True)
class Run:
    """Which run of the task is under way, why it started, and whether a node holds its files."""

    number: int
    why: str | None
    on_node: bool


def run_of(task: Any) -> Run:
    """The run ``task`` (a BatchTask) is on: each requeue and each retry started one."""
    info = getattr(task, "execution_info", None)
    requeues = int(getattr(info, "requeue_count", 0) or 0)
    retries = int(getattr(info, "retry_count", 0) or 0)
    requeued, retried = getattr(info, "last_requeue_time", None), getattr(info, "last_retry_time", None)
    why = None
    if requeues or retries:
        latest_requeue = requeued is not None and (retried is None or requeued >= retried)
        why = "requeued onto another node" if latest_requeue and requeues else "retried after a failed run"
    return Run(requeues + retries, why, enum_text(getattr(task, "state", None)) in _ON_A_NODE)


class TaskStreams:
    """Reads the streams of Batch tasks through the adapter's client and calls; ``blobs`` keeps the copies."""

    def __init__(self, client: Any, calls: ProviderCalls, blobs: Any) -> None:
        self._client = client
        self._calls = calls
        self._blobs = blobs

    def read(
        self, handle: ComputeJobHandle, job_id: str, task_id: str, path: str, run: int, offset: int, limit: int
    ) -> StreamRead | None:
        """Run ``run`` of ``path`` from ``offset`` (at most ``limit`` bytes), once, without waiting on the node.

        None: the task could not be read, so nobody can tell which run is under way.
        """
        if path not in taskspec.STD_LOG_PATHS:
            return None
        before = self._run(job_id, task_id)
        if before is None:
            return None
        if before.number != run or not before.on_node:
            return StreamRead(run=before.number, why=before.why)
        data = self._node_range(job_id, task_id, path, offset, limit)
        after = self._run(job_id, task_id) if data is not None else before
        if after is None or after.number != before.number:  # the run changed under the read: whose bytes?
            return StreamRead(run=after.number if after else before.number, why=(after or before).why)
        if data:
            logcopy.keep(
                self._blobs, handle.output.container, handle.output.child(run_copy(BACKEND, run, path)), offset, data
            )
        return StreamRead(run=run, why=before.why, data=data)

    def _run(self, job_id: str, task_id: str) -> Run | None:
        task = self._calls.attempt(
            lambda: self._client.get_task(job_id, task_id), what=f"reading Batch task {task_id}", retry_on=()
        )
        if isinstance(task, Failed):
            log.info("Batch task %s not read for its streams (%s)", task_id, task.reason)
            return None
        return run_of(task)

    def _node_range(self, job_id: str, task_id: str, path: str, offset: int, limit: int) -> bytes | None:
        # A range that starts inside the file (one byte early): where it would start at its end is not documented.
        start = max(0, offset - 1)

        def download() -> bytes:
            ranged = f"bytes={start}-{offset + limit - 1}"
            return b"".join(
                self._client.download_task_file(job_id, task_id, taskspec.node_file_path(path), ocp_range=ranged)
            )

        read = self._calls.attempt(download, what=f"reading {path} of Batch task {task_id}", retry_on=())
        if isinstance(read, Failed):
            log.info("Batch job %s: %s not read from the node (%s)", job_id, path, read.reason)
            return None
        return read[offset - start :]
