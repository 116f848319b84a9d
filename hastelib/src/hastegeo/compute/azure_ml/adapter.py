"""The Azure ML backend: each job one command job, named after our job id.

Submit is a PUT by name, preceded by a GET: a name that exists is bound when
its fingerprint tag matches this spec (a resubmit), and refused otherwise.
Status is ``jobs.get`` (the truth; ``stream`` raises only on Failed), mapped
by :mod:`.status`. Outputs are ``uri_folder`` mounts on the spec's blob prefix,
so ``read_output`` reads that blob and finished jobs stay readable after
their compute is gone. The job's runtime copies its checkpoint folder under
the same prefix and puts it back before the next attempt (ADR 0044), so a
retry or a fail-over onto Azure ML resumes as it does on Batch. Every SDK
call goes through the one retried, translated call (:func:`.errors.aml_calls`),
so errors leave this module as the project's own.

What a submit decided that users should see — an Environment created on the
fly, a run that uses a local code snapshot — is logged, kept in the handle's
``notes``, and written with the code hash to
``logs/azure_ml_submission.json`` under the job's output prefix.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hastegeo.checkpoints.access import account_url
from hastegeo.compute.azure_ml.capacity import run_wait
from hastegeo.compute.azure_ml.client import ClientFactory, MLClientLike, create_ml_client
from hastegeo.compute.azure_ml.entities import (
    TAG_FINGERPRINT,
    build_command_job,
    code_snapshot_hash,
    experiment_name,
    inline_environment,
    job_name,
    source_description,
)
from hastegeo.compute.azure_ml.environments import ensure_registered
from hastegeo.compute.azure_ml.errors import BACKEND, COORDINATES, aml_calls
from hastegeo.compute.azure_ml.events import TAG_JOB_ID
from hastegeo.compute.azure_ml.joblog import LOG_READ_BUDGET, STD_LOG_PATHS, LogReadBudget, read_stream
from hastegeo.compute.azure_ml.settings import AmlSettings, EnvironmentSource
from hastegeo.compute.azure_ml.status import QUEUED_STATUSES, TERMINAL_STATUSES, map_status, status_text
from hastegeo.compute.azure_ml.usage import job_usage
from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import (
    ComputeBackend,
    ComputeJobHandle,
    ComputeJobSpec,
    ComputeStatus,
    OutputRead,
)
from hastegeo.compute.retry import ErrorKind, ProviderCalls
from hastegeo.costs.usage import Usage
from hastegeo.utils.errors import (
    ConfigurationError,
    HasteError,
    TerminalBackendError,
    TransientBackendError,
    describe_error,
    describe_exception,
)

if TYPE_CHECKING:
    from azure.ai.ml.entities import Job
    from azure.storage.blob import BlobServiceClient

log = logging.getLogger(__name__)

SUBMISSION_RECORD = "logs/azure_ml_submission.json"
CODE_WARNING = (
    "runs with a local code snapshot from AML_CODE_DIR (sha256 {hash}); it may not be reproducible from the image alone"
)
SUBMIT_HINT = f"{COORDINATES}, AML_COMPUTE, AML_DATASTORES and the environment settings"


class AzureMLBackend(ComputeBackend):
    name: ClassVar[str] = BACKEND

    def __init__(
        self,
        settings: AmlSettings,
        client: MLClientLike,
        blob_service: BlobServiceClient,
        *,
        calls: ProviderCalls,
        clock: Callable[[], datetime],
        log_budget: LogReadBudget = LOG_READ_BUDGET,
    ) -> None:
        self._settings = settings
        self._log_budget = log_budget
        self._client = client
        self._blobs = blob_service
        self._calls = calls
        self._clock = clock
        self._code_hash = code_snapshot_hash(settings.code_dir) if settings.code_dir else None
        self._env_lock = threading.Lock()
        self._computes: dict[str, Any] = {}  # each cluster's size, tier and region, for costs
        self._registered: str | None = None  # "name:version", once ensured

    # -- the contract ---------------------------------------------------------------

    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle:
        """Submit ``spec`` as a command job, or bind to the job a previous attempt created.

        Raises:
            TerminalBackendError: bad settings, a rejected job, or a same-named job that is not ours.
            TransientBackendError: the service stayed unavailable for the whole retry budget.
        """
        name = job_name(spec)
        notes: list[str] = []
        try:
            environment, environment_id = self._environment(spec, notes)
            job = build_command_job(
                spec, self._settings, environment=environment, code_dir=self._settings.code_dir or None,
                code_hash=self._code_hash, blob_account_url=account_url(self._blobs),
            )  # fmt: skip
        except ConfigurationError as exc:
            raise TerminalBackendError(str(exc), backend=BACKEND) from exc
        if self._code_hash:
            notes.append(CODE_WARNING.format(hash=self._code_hash[:16]))
            log.warning("Azure ML job %s %s", name, notes[-1])
        existing = self._find(name)
        if existing is None:
            created = self._calls.call_unless(
                {ErrorKind.EXISTS},
                lambda: self._client.jobs.create_or_update(job),
                what=f"submit job {name}",
                hint=SUBMIT_HINT,
            )
            if created is None:  # a 409: a concurrent attempt created it first
                existing = self._find(name)
                if existing is None:
                    raise TransientBackendError(f"Azure ML job {name} conflicted but is not visible yet")
        if existing is not None:
            self._verify_ours(existing, spec)
            log.info("Azure ML job %s exists and is ours: bound instead of submitting again", name)
        provider_ids = {
            "job_name": name,
            "experiment": experiment_name(self._settings, spec),
            "environment": environment_id,
        }
        if self._code_hash:
            provider_ids["code_sha256"] = self._code_hash
        handle = ComputeJobHandle(
            backend=BACKEND,
            provider_ids=provider_ids,
            output=spec.output,
            submitted_at=self._clock(),
            notes="; ".join(notes) or None,
        )
        self._record(handle, notes)
        return handle

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        name = handle.provider_ids["job_name"]
        job = self._find(name)
        if job is None:
            raise TerminalBackendError(f"Azure ML job {name} no longer exists", backend=BACKEND)
        status = status_text(job.status)
        if status in QUEUED_STATUSES:
            details = self._run_details(name, "is queued")
            compute = str(getattr(job, "compute", None) or "of the job")
            return map_status(status, capacity=run_wait(details, compute) if details is not None else None)
        mapped = map_status(status, failure=self._failure(name) if status == "Failed" else None)
        if not mapped.state.terminal:
            return mapped
        return mapped.model_copy(update={"usage": self._usage(name, job)})

    def _usage(self, name: str, job: Job) -> Usage | None:
        """What the ended job ran on (docs/adr/0038): its run details and its cluster (read once per adapter)."""
        details = self._run_details(name, "ended")
        compute_name = str(getattr(job, "compute", None) or "")
        if compute_name and compute_name not in self._computes:
            try:
                self._computes[compute_name] = self._calls.call(
                    lambda: self._client.compute.get(compute_name), what=f"read compute {compute_name}"
                )
            except HasteError as exc:
                log.info("compute %s could not be read for a cost: %s", compute_name, describe_exception(exc))
        compute = self._computes.get(compute_name)
        return job_usage(job, details, compute, self._settings.region, self._clock(), ended=True)

    def read_output(self, handle: ComputeJobHandle, path: str) -> OutputRead:
        """The blob the job's output mount wrote: finished jobs stay readable after their compute is gone."""
        blob = self._blobs.get_blob_client(handle.output.container, handle.output.child(path))
        data: bytes | None = self._calls.call_unless(
            {ErrorKind.NOT_FOUND},
            lambda: blob.download_blob().readall(),
            what=f"read {path}",
            hint="the storage settings (AzureWebJobsStorage)",
        )
        return OutputRead(data=data)

    def read_output_tail(
        self, handle: ComputeJobHandle, path: str, offset: int, limit: int = 64 * 1024
    ) -> bytes | None:
        """stdout or stderr by byte range, from its own file or the job's log in run history (:mod:`.joblog`);
        None for any other file, or when neither can be read (the blob copy is asked then)."""
        if path not in STD_LOG_PATHS:
            return None
        name = handle.provider_ids["job_name"]
        own = self._blobs.get_blob_client(handle.output.container, handle.output.child(path))
        details = functools.partial(self._run_details, name, "is read")  # read only when the stream has no file
        return read_stream(own, details, offset, limit, name, self._log_budget)

    def cancel(self, handle: ComputeJobHandle) -> None:
        name = handle.provider_ids["job_name"]
        job = self._find(name)
        if job is None or status_text(job.status) in TERMINAL_STATUSES:
            log.info("Azure ML job %s is gone or finished: nothing to cancel", name)
            return
        try:
            self._calls.call(lambda: self._client.jobs.begin_cancel(name), what=f"cancel job {name}", hint=SUBMIT_HINT)
        except TerminalBackendError:
            job = self._find(name)  # it may have finished between the get and the cancel
            if job is None or status_text(job.status) in TERMINAL_STATUSES:
                return
            raise

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        """(our job id, handle) of every job in the workspace that carries our job-id tag and has not ended.

        Jobs of other submitters (no ``haste_job_id`` tag, or another experiment
        prefix) are never listed, so the reconciler cannot cancel them.
        """
        jobs = self._calls.call(lambda: list(self._client.jobs.list()), what="list jobs", hint=COORDINATES)
        active: list[tuple[str, ComputeJobHandle]] = []
        for job in jobs:
            ours = (job.tags or {}).get(TAG_JOB_ID)
            experiment = str(job.experiment_name or "")
            if not ours or not job.name or not experiment.startswith(self._settings.experiment):
                continue
            if status_text(job.status) in TERMINAL_STATUSES:
                continue
            created = getattr(job.creation_context, "created_at", None)
            handle = ComputeJobHandle(
                backend=BACKEND,
                provider_ids={"job_name": job.name, "experiment": experiment},
                submitted_at=created if isinstance(created, datetime) else self._clock(),
            )
            active.append((str(ours), handle))
        return active

    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> None:
        log.info(
            "Azure ML cleanup of %s: nothing to do (compute scales down by itself; the job record and its "
            "outputs on the datastore are kept)",
            handle.provider_ids.get("job_name"),
        )

    # -- helpers ----------------------------------------------------------------------

    def _environment(self, spec: ComputeJobSpec, notes: list[str]) -> tuple[Any, str]:
        """The job's ``environment=`` and a short id for the handle; ensures a registered one exists."""
        settings = self._settings
        if settings.environment_source is not EnvironmentSource.REGISTERED:
            environment = inline_environment(settings, spec)
            if environment.image:
                return environment, f"image:{environment.image}"
            return environment, source_description(settings)
        with self._env_lock:
            if self._registered is None:
                outcome = ensure_registered(self._client, settings, self._calls)
                if outcome.action == "created":
                    notes.append(outcome.message)
                    log.warning("Azure ML: %s", outcome.message)
                self._registered = outcome.reference
            return f"azureml:{self._registered}", self._registered

    def _find(self, name: str) -> Job | None:
        return self._calls.call_unless(
            {ErrorKind.NOT_FOUND}, lambda: self._client.jobs.get(name), what=f"get job {name}", hint=COORDINATES
        )

    def _verify_ours(self, job: Job, spec: ComputeJobSpec) -> None:
        found = (job.tags or {}).get(TAG_FINGERPRINT)
        if not spec.is_same_submission(found):
            raise TerminalBackendError(
                f"An Azure ML job named {job.name} exists but was not submitted for this job spec "
                f"(fingerprint {found or 'missing'}); refusing to bind to it",
                backend=BACKEND,
            )

    def _failure(self, name: str) -> str | None:
        """``Code: message`` of a failed job, from run history (best effort; the SDK keeps it there)."""
        error = getattr(getattr(self._run_details(name, "failed"), "error", None), "error", None)
        return None if error is None else describe_error(getattr(error, "code", None), getattr(error, "message", None))

    def _run_details(self, name: str, why: str) -> Any:
        """The job's run details (its error, warnings) from run history; None when they cannot be read."""
        try:
            runs = getattr(self._client.jobs, "_runs_operations", None)  # may itself call the service
            return runs.get_run_details(name) if runs is not None else None
        except Exception as exc:
            log.info("Azure ML job %s %s; its run details could not be read: %s", name, why, describe_exception(exc))
            return None

    def _record(self, handle: ComputeJobHandle, notes: list[str]) -> None:
        record = {
            "backend": BACKEND,
            "jobName": handle.provider_ids["job_name"],
            "environment": handle.provider_ids["environment"],
            "codeSha256": self._code_hash,
            "notes": notes,
            "submittedAt": handle.submitted_at.isoformat(),
        }
        blob = self._blobs.get_blob_client(handle.output.container, handle.output.child(SUBMISSION_RECORD))
        data = json.dumps(record, indent=2, sort_keys=True).encode()
        self._calls.call(
            lambda: blob.upload_blob(data, overwrite=True),
            what=f"record submission of {handle.provider_ids['job_name']}",
            hint="the storage settings (AzureWebJobsStorage, HASTE_OUTPUTS_CONTAINER)",
        )


def create(
    context: BackendContext, client_factory: ClientFactory | None = None, log_budget: LogReadBudget = LOG_READ_BUDGET
) -> AzureMLBackend:
    """The production factory the registry calls (``hastegeo.compute.azure_ml.adapter:create``).

    Raises:
        ConfigurationError: ``AML_MODE`` is Disabled or ``AML_CODE_DIR`` is not a directory.
    """
    settings = context.section(AmlSettings)
    if not settings.enabled:
        raise ConfigurationError("azure_ml is used but AML_MODE is Disabled: set AML_MODE=Existing (or Create)")
    if settings.code_dir and not Path(settings.code_dir).is_dir():
        raise ConfigurationError(f"AML_CODE_DIR {settings.code_dir!r} is not a directory")
    client = (client_factory or create_ml_client)(settings)
    calls = aml_calls(settings.retry_attempts, settings.retry_delay_s, context.sleep)
    return AzureMLBackend(
        settings, client, context.blob_service, calls=calls, clock=context.clock, log_budget=log_budget
    )
