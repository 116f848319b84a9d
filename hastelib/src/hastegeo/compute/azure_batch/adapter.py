"""The Azure Batch backend: one Batch job with one task per submission, outputs carried by blob.

Every SDK call goes through the one retried, translated call
(:class:`hastegeo.compute.retry.ProviderCalls`, the only retry owner: the client
is built with ``retry_total=0``): Azure exceptions leave it in the project's
error tree with the original chained, or come back as data (:class:`Failed`)
where this adapter decides something from them; none is caught here.

Node reads are a best-effort first try: the task's state lives in the service
and survives node loss, its files do not; a read that finds the node gone says
so in its :class:`OutputRead`, and cleanup is told, so the decision travels
with the data on whichever worker runs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, ClassVar

from azure.batch import BatchClient
from azure.batch.models._models import BatchJobTerminateOptions

from hastegeo.checkpoints.access import account_url
from hastegeo.compute.azure_batch import taskspec
from hastegeo.compute.azure_batch.capacity import pool_missing, pool_view, pool_wait
from hastegeo.compute.azure_batch.errors import BATCH_ERRORS
from hastegeo.compute.azure_batch.naming import provider_id
from hastegeo.compute.azure_batch.settings import AuthMode, BatchSettings
from hastegeo.compute.azure_batch.status import CANCEL_REASON, task_view, to_status
from hastegeo.compute.azure_batch.streams import TaskStreams
from hastegeo.compute.azure_batch.taskspec import JOB_ID_METADATA
from hastegeo.compute.azure_batch.usage import PoolShape, node_priority, pool_shape, region_of, task_usage
from hastegeo.compute.capacity import CapacityWait
from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import (
    ComputeBackend,
    ComputeJobHandle,
    ComputeJobSpec,
    ComputeStatus,
    OutputRead,
    StreamRead,
)
from hastegeo.compute.identity import azure_credential
from hastegeo.compute.retry import ErrorKind, Failed, ProviderCalls, RetryBudget, RetryPolicy
from hastegeo.compute.tail import TAIL_BYTES
from hastegeo.costs.prices import Priority
from hastegeo.costs.usage import Usage
from hastegeo.utils.errors import (
    BackendError,
    ConfigurationError,
    TerminalBackendError,
    TransientBackendError,
    describe_exception,
)

log = logging.getLogger(__name__)

CLEANUP_REASON = "HasteCleanup"
_UNAVAILABLE = frozenset({ErrorKind.NODE_GONE, ErrorKind.NODE_TRANSITION, ErrorKind.NOT_FOUND})
_FINISHED = frozenset({ErrorKind.FINISHED})
_BOUND = frozenset({ErrorKind.EXISTS, ErrorKind.FINISHED})  # a create that met what a previous attempt made
_ENDED = frozenset({ErrorKind.FINISHED, ErrorKind.NOT_FOUND})  # nothing left to cancel or terminate


class BatchBackend(ComputeBackend):
    """:class:`ComputeBackend` on Azure Batch. Build it with :func:`create`."""

    name: ClassVar[str] = "azure_batch"

    def __init__(
        self,
        client: BatchClient,
        settings: BatchSettings,
        blob_service: Any,
        *,
        blob_account_url: str,
        clock: Callable[[], datetime],
        sleep: Callable[[float], None],
    ) -> None:
        self._client = client
        self._settings = settings
        self._blobs = blob_service
        self._blob_account_url = blob_account_url.rstrip("/")
        self._clock = clock
        budget = RetryBudget(settings.retry_attempts, settings.retry_backoff_s, settings.retry_max_wait_s)
        self._calls = ProviderCalls(RetryPolicy(budget, BATCH_ERRORS, sleep))
        self._region = settings.region or region_of(settings.account_url)
        self._pools: dict[str, PoolShape | None] = {}  # what each pool is made of, for costs
        self._nodes: dict[str, Priority | None] = {}  # in pools of both kinds, whether each node is spot
        self._streams = TaskStreams(client, self._calls, blob_service)

    # -- ComputeBackend --------------------------------------------------------------

    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle:
        """Create job (noaction) → add task → switch job to terminatejob. A repeat binds to what exists.

        Raises:
            TerminalBackendError: no pool/image for the workload, or the ids belong to another submission.
            TransientBackendError: Batch stayed busy or unreachable for the whole retry budget.
        """
        pool_id, tier = self._settings.placement(spec.workload, spec.profile)
        if not pool_id:
            where = f"under profile {spec.profile!r} (BATCH_PROFILES)" if spec.profile else "(BATCH_POOLS)"
            raise TerminalBackendError(f"No Batch pool for workload {spec.workload!r} {where}", backend=self.name)
        image = spec.image or self._settings.images.get(spec.workload)
        if not image:
            raise TerminalBackendError(f"No image for workload {spec.workload!r} (BATCH_IMAGES)", backend=self.name)
        job_id = provider_id(spec.name)
        task_id = job_id
        digest = spec.fingerprint()  # what a later submit compares (is_same_submission)
        placement = taskspec.Placement(
            pool_id=pool_id,
            image=image,
            blob_account_url=self._blob_account_url,
            identity_resource_id=self._settings.identity_resource_id,
            registry=self._settings.registry,
            retention_s=self._settings.retention_s,
            tier=tier,
        )
        task = taskspec.task_options(spec, task_id, placement, digest)  # a bad spec fails before any call
        what = f"submitting Batch job {job_id}"
        self._create_job(taskspec.job_options(spec, job_id, pool_id, digest), spec, what)
        self._create_task(job_id, task, spec, what)
        # Let the job end with its task (FINISHED: it already completed, nothing left to switch).
        self._calls.call_unless(
            _FINISHED, lambda: self._client.update_job(job_id, taskspec.terminate_when_done()), what=what
        )
        return ComputeJobHandle(
            backend=self.name,
            provider_ids={"job_id": job_id, "task_id": task_id, "pool_id": pool_id},
            output=spec.output,
            submitted_at=self._clock(),
        )

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        """The task's state from the service (which survives node loss); a failure carries exit code and stderr."""
        job_id, task_id = self._ids(handle)
        what = f"reading Batch task {task_id}"
        task = self._calls.call(lambda: self._client.get_task(job_id, task_id), what=what)
        view = task_view(task)
        cancelled = view.failed and self._terminated_by_cancel(job_id, what)
        tail = self._stderr_tail(handle) if view.failed and not cancelled else None
        capacity = self._pool_wait(handle) if view.state == "active" else None
        status = to_status(view, stderr_tail=tail, cancelled=cancelled, capacity=capacity)
        return status.model_copy(update={"usage": self._usage(handle, task)})

    def _usage(self, handle: ComputeJobHandle, task: Any) -> Usage | None:
        """What the task ran on (docs/adr/0038); its pool is read once per adapter."""
        if getattr(getattr(task, "execution_info", None), "start_time", None) is None:
            return None
        pool_id = handle.provider_ids.get("pool_id") or ""
        if pool_id and pool_id not in self._pools:
            pool = self._calls.attempt(lambda: self._client.get_pool(pool_id), what=f"reading Batch pool {pool_id}")
            if isinstance(pool, Failed):
                log.info("pool %s could not be read for a cost: %s", pool_id, pool.reason)
            else:
                self._pools[pool_id] = pool_shape(pool)
        shape = self._pools.get(pool_id)
        if shape is not None and shape.priority is None:  # dedicated and spot nodes both: the node says
            shape = self._node_shape(pool_id, shape, task)
        return task_usage(task, shape, self._region, self._clock())

    def _node_shape(self, pool_id: str, shape: PoolShape, task: Any) -> PoolShape:
        """``shape`` with the priority of the node ``task`` runs on (read once per node; unread: unchanged)."""
        node_id = str(getattr(getattr(task, "node_info", None), "node_id", None) or "")
        if not node_id:
            return shape
        if node_id not in self._nodes:
            what = f"reading Batch node {node_id} of pool {pool_id}"
            node = self._calls.attempt(lambda: self._client.get_node(pool_id, node_id), what=what)
            if isinstance(node, Failed):
                log.info("node %s could not be read for a cost: %s", node_id, node.reason)
                return shape
            self._nodes[node_id] = node_priority(node)
        priority = self._nodes[node_id]
        return shape if priority is None else replace(shape, priority=priority)

    def read_output(self, handle: ComputeJobHandle, path: str) -> OutputRead:
        """The file from the node, or no data when the node cannot serve it (gone, mid-transition, no such file)."""
        job_id, task_id = self._ids(handle)
        node_path = taskspec.node_file_path(path)

        def download() -> bytes:
            return b"".join(self._client.download_task_file(job_id, task_id, node_path))

        read = self._calls.attempt(download, what=f"reading {path} of Batch task {task_id}")
        if not isinstance(read, Failed):
            return OutputRead(data=read)
        if read.kind not in _UNAVAILABLE:
            raise read.error
        # Keep the first cause too: "NodeNotReady: …" explains a later "NodeNotFound: …".
        reason = "; then ".join(dict.fromkeys(cause.rstrip(".") for cause in (*read.retried[:1], read.reason)))
        log.warning("Batch job %s: %s not readable from the node (%s)", job_id, path, reason)
        return OutputRead(data=None, unavailable_reason=None if read.kind is ErrorKind.NOT_FOUND else reason)

    def read_stream(self, handle: ComputeJobHandle, path: str, run: int, offset: int, limit: int) -> StreamRead | None:
        """stdout or stderr of run ``run`` from the node by byte range, and the run under way (:mod:`.streams`)."""
        job_id, task_id = self._ids(handle)
        return self._streams.read(handle, job_id, task_id, path, run, offset, limit)

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        """(our job id, handle) of every active Batch job this pipeline created, for the reconciler."""
        active: list[tuple[str, ComputeJobHandle]] = []
        jobs = self._calls.call(
            lambda: list(self._client.list_jobs(filter="state eq 'active'")), what="listing Batch jobs"
        )
        for job in jobs:
            metadata = {item.name: item.value for item in job.metadata or []}
            ours = metadata.get(JOB_ID_METADATA)
            if not ours or not job.id:
                continue  # not created by this pipeline
            handle = ComputeJobHandle(
                backend=self.name,
                provider_ids={"job_id": job.id, "task_id": job.id, "pool_id": getattr(job.pool_info, "pool_id", "")},
                submitted_at=job.creation_time or self._clock(),
            )
            active.append((ours, handle))
        return active

    def cancel(self, handle: ComputeJobHandle) -> None:
        """Terminate the job (recording our reason first), then the task; finished ones are not an error."""
        job_id, task_id = self._ids(handle)
        self._terminate_job(job_id, CANCEL_REASON)
        self._calls.call_unless(
            _ENDED, lambda: self._client.terminate_task(job_id, task_id), what=f"terminating Batch task {task_id}"
        )

    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> None:
        """Delete the working directory (skipped when a read found the node gone), then always terminate THIS job.

        Never disables a job: each submission has its own, so nothing else shares it.
        """
        job_id, task_id = self._ids(handle)
        if unavailable_reason is None:
            deleted = self._calls.attempt(
                lambda: self._client.delete_task_file(job_id, task_id, taskspec.WORKDIR_ON_NODE, recursive=True),
                what=f"deleting the working directory of Batch task {task_id}",
                retry_on={ErrorKind.TRANSIENT},  # no waiting on a node
            )
            if isinstance(deleted, Failed):  # best-effort: the task's retention time reclaims the disk
                log.info("Batch job %s: working directory not deleted (%s)", job_id, deleted.reason)
        self._terminate_job(job_id, CLEANUP_REASON)

    # -- extras ----------------------------------------------------------------------

    def close(self) -> None:
        """Release the HTTP session (the registry's owner calls this at shutdown)."""
        self._client.close()

    # -- internals -------------------------------------------------------------------

    def _create_job(self, options: Any, spec: ComputeJobSpec, what: str) -> None:
        job_id = options.id
        created = self._calls.attempt(lambda: self._client.create_job(options), what=what)
        if not isinstance(created, Failed):
            return
        if created.kind is not ErrorKind.EXISTS:
            raise created.error
        job = self._calls.call(lambda: self._client.get_job(job_id), what=what)
        metadata = {item.name: item.value for item in (job.metadata or [])}
        if not spec.is_same_submission(metadata.get(taskspec.FINGERPRINT_METADATA)):
            raise TerminalBackendError(
                f"Batch job {job_id} already exists and belongs to another submission", backend=self.name
            ) from created.cause
        log.info("Batch job %s already exists and is ours: binding", job_id)

    def _create_task(self, job_id: str, task: Any, spec: ComputeJobSpec, what: str) -> None:
        created = self._calls.attempt(lambda: self._client.create_task(job_id, task), what=what)
        if not isinstance(created, Failed):
            return
        if created.kind not in _BOUND:
            raise created.error
        existing = self._calls.attempt(lambda: self._client.get_task(job_id, task.id), what=what)
        if isinstance(existing, Failed):
            raise created.error  # the create's refusal says more than the lookup's
        env = {item.name: item.value for item in (existing.environment_settings or [])}
        if not spec.is_same_submission(env.get(taskspec.FINGERPRINT_VARIABLE)):
            raise TerminalBackendError(
                f"Batch task {task.id} already exists and belongs to another submission", backend=self.name
            ) from created.cause
        log.info("Batch task %s already exists and is ours: binding", task.id)

    def _terminated_by_cancel(self, job_id: str, what: str) -> bool:
        job = self._calls.call(lambda: self._client.get_job(job_id), what=what)
        info = getattr(job, "execution_info", None)
        return getattr(info, "termination_reason", None) == CANCEL_REASON

    def _terminate_job(self, job_id: str, reason: str) -> None:
        options = BatchJobTerminateOptions(termination_reason=reason)
        poller = self._calls.call_unless(
            _ENDED,
            lambda: self._client.begin_terminate_job(job_id, options, polling_interval=2),
            what=f"terminating Batch job {job_id}",
        )
        if poller is None:  # finished or gone already
            return
        # The poller hides its own failures: look at its status instead of trusting silence.
        poller.wait(timeout=self._settings.terminate_wait_s)
        if poller.status() == "Failed":
            raise TransientBackendError(f"Termination of Batch job {job_id} could not be confirmed", backend=self.name)

    def _pool_wait(self, handle: ComputeJobHandle) -> CapacityWait | None:
        """Why the task's pool has no node for it; None when the pool cannot be read (the status still holds)."""
        pool_id = handle.provider_ids.get("pool_id") or ""
        if not pool_id:
            return None
        pool = self._calls.attempt(lambda: self._client.get_pool(pool_id), what=f"reading Batch pool {pool_id}")
        if not isinstance(pool, Failed):
            return pool_wait(pool_view(pool, pool_id))
        if pool.code == "PoolNotFound":
            return pool_missing(pool_id)
        log.info("pool %s could not be read: %s", pool_id, pool.reason)
        return None

    def _stderr_tail(self, handle: ComputeJobHandle) -> str | None:
        """The end of stderr: the blob copy first (it survives the node), then the node."""
        blob_name = handle.output.child("logs/stderr.txt")
        try:
            blob = self._blobs.get_blob_client(handle.output.container, blob_name)
            size = int(blob.get_blob_properties().size)
            data: bytes = blob.download_blob(offset=max(0, size - TAIL_BYTES)).readall() if size else b""
        except Exception as exc:  # best-effort: a missing log must not hide the failure itself
            log.info("stderr of %s not readable from blob (%s)", blob_name, describe_exception(exc))
            try:
                data = self.read_output(handle, "logs/stderr.txt").data or b""
            except BackendError:
                return None
        return data[-TAIL_BYTES:].decode("utf-8", errors="replace") or None

    def _ids(self, handle: ComputeJobHandle) -> tuple[str, str]:
        job_id, task_id = handle.provider_ids.get("job_id"), handle.provider_ids.get("task_id")
        if handle.backend != self.name or not job_id or not task_id:
            raise TerminalBackendError(f"Not a Batch job handle: {handle.provider_ids}", backend=self.name)
        return job_id, task_id


def create(context: BackendContext) -> BatchBackend:
    """The production factory (the registry imports it lazily).

    Raises:
        ConfigurationError: the account URL or the pools' identity is not configured.
    """
    settings = context.section(BatchSettings)
    if not settings.account_url:
        raise ConfigurationError("BATCH_ACCOUNT_URL is empty")
    if not settings.identity_resource_id:
        raise ConfigurationError("BATCH_IDENTITY_RESOURCE_ID is empty: pools read inputs and write outputs with it")
    client = BatchClient(
        settings.account_url,
        _credential(settings),
        retry_total=0,  # the adapter owns retries (see docs/adr/0003-batch-retry-and-node-loss.md)
        connection_timeout=settings.request_timeout_s,
        read_timeout=settings.request_timeout_s,
    )
    return BatchBackend(
        client,
        settings,
        context.blob_service,
        blob_account_url=account_url(context.blob_service),
        clock=context.clock,
        sleep=context.sleep,
    )


def _credential(settings: BatchSettings) -> Any:
    if settings.auth_mode is AuthMode.SHARED_KEY:
        from azure.core.credentials import AzureNamedKeyCredential

        return AzureNamedKeyCredential(settings.account_name, settings.account_key)
    return azure_credential(settings.auth_mode.value, settings.client_id)
