"""What every workload's processor shares: the request → spec mapping before, the output checks after.

Each workload folder's ``processor.py`` subclasses :class:`Processor`.

Processors never talk to a backend; they get an :class:`OutputAccess` that
reads provider-first with a blob fallback, so the same checks run whatever
the job ran on. The manifest is required (it is written last, so its
presence means the outputs are complete); the progress log is best-effort.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import ValidationError

from hastegeo.checkpoints.layout import DEFAULT_INTERVAL_S
from hastegeo.checkpoints.placement import checkpoint_env
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, InputFile, Resources
from hastegeo.models.job import Job, JobRequest, OutputRecord
from hastegeo.models.ownership import ProjectOf, staged_inputs
from hastegeo.models.params import Params, first_error
from hastegeo.utils.errors import ConfigurationError, InvalidJobError
from hastegeo.workloads.descriptor import WorkloadDescriptor
from hastegeo.workloads.registry import descriptors

# Outputs up to this size are re-hashed against the manifest; larger ones are
# checked by size (the workload hashed them; re-reading gigabytes here would
# cost more than it protects).
HASH_CHECK_MAX_BYTES = 64 * 1024 * 1024


def _no_explanation(path: str) -> str | None:
    return None


@dataclass(frozen=True)
class OutputAccess:
    """How a processor reads a finished job's files (paths relative to the output prefix).

    ``unreadable(path)`` says, after ``read(path)`` returned None, why neither
    the provider nor the blob copy could serve it (both causes, one line), or
    None when nothing more is known than "not found".
    """

    read: Callable[[str], bytes | None]
    blob_size: Callable[[str], int | None]
    read_blob: Callable[[str], bytes | None]
    unreadable: Callable[[str], str | None] = _no_explanation


@dataclass(frozen=True)
class PostprocessResult:
    outputs: list[OutputRecord]
    notes: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


class PostprocessError(Exception):
    """The outputs are missing or do not match the manifest; the job fails with this reason."""


@dataclass(frozen=True)
class SpecInputs:
    """Where inputs come from, which project a job id belongs to (inputs stay in the job's project), and how
    often a running job copies its checkpoint folder (``HASTE_CHECKPOINT_INTERVAL_S``)."""

    inputs_container: str
    outputs_container: str
    project_of: ProjectOf
    checkpoint_interval_s: float = DEFAULT_INTERVAL_S


class Processor:
    workload: ClassVar[str]
    # The workload's model (its folder's params.py), or a subclass adding keys only the pipeline reads.
    params_model: ClassVar[type[Params]] = Params
    resources: ClassVar[Resources] = Resources()
    time_limit_s: ClassVar[int] = 3600

    @property
    def package(self) -> str:
        """What compute runs, as ``python -m <package>``: the workload folder its descriptor names."""
        return descriptors()[self.workload].package

    @property
    def manifest_path(self) -> str:
        return f"outputs/{self.workload}_manifest.json"

    @property
    def progress_log_path(self) -> str:
        return f"logs/{self.workload}_progress.log"

    # -- before ----------------------------------------------------------------

    def validate(self, request: JobRequest) -> None:
        """Raises InvalidJobError with the field path (``parameters.x``) of the first problem."""
        try:
            self.params_model.model_validate(request.parameters)
        except ValidationError as exc:
            where, message = first_error(exc)
            path = f"parameters.{where}" if where else "parameters"
            raise InvalidJobError(f"{path}: {message}", field=path) from None

    def build_spec(self, job: Job, where: SpecInputs, output: BlobLocation) -> ComputeJobSpec:
        # Only what the client set: the workload owns its defaults (docs/workloads.md).
        params = self.params_model.model_validate(job.parameters).model_dump(
            mode="json", by_alias=True, exclude_unset=True, exclude_none=True
        )
        return ComputeJobSpec(
            job_id=job.id,
            name=spec_name(job.id),
            workload=self.workload,
            entrypoint=("python", "-m", self.package),
            env={
                "HASTE_PARAMS_JSON": json.dumps(params, sort_keys=True),
                "HASTE_JOB_ID": job.id,
                **checkpoint_env(job, output, where.project_of, interval_s=where.checkpoint_interval_s),
            },
            inputs=tuple(self.stage_inputs(job, where)),
            output=output,
            resources=self.resources,
            time_limit_s=self.time_limit_s,
            labels={"project": job.project_id, "job": job.id, "workload": self.workload},
        )

    def stage_inputs(self, job: Job, where: SpecInputs) -> list[InputFile]:
        """The job's inputs as staging instructions, every source inside the job's project.

        Raises:
            InvalidJobError: an input lies outside the project (whatever wrote the job document).
        """
        return staged_inputs(
            job.project_id,
            job.inputs,
            inputs_container=where.inputs_container,
            outputs_container=where.outputs_container,
            project_of=where.project_of,
        )

    # -- after -----------------------------------------------------------------

    def postprocess(self, job: Job, access: OutputAccess, output: BlobLocation) -> PostprocessResult:
        """Read and verify the manifest, then every output it lists.

        Raises:
            PostprocessError: with a readable reason.
        """
        raw = access.read(self.manifest_path)
        if raw is None:
            raise PostprocessError(
                access.unreadable(self.manifest_path)
                or f"{self.manifest_path} was not found on the backend or in blob storage"
            )
        try:
            manifest = json.loads(raw)
            files = manifest["files"]
            if not isinstance(files, list):
                raise TypeError("files is not a list")
        except (ValueError, KeyError, TypeError):
            raise PostprocessError(f"{self.manifest_path} is not a valid manifest") from None
        records = [
            OutputRecord(
                name=self.manifest_path,
                blob=f"{output.container}/{output.child(self.manifest_path)}",
                size=len(raw),
                sha256=hashlib.sha256(raw).hexdigest(),
            )
        ]
        for entry in files:
            records.append(self._verify(entry, access, output))
        self.check(job, manifest, access)
        return PostprocessResult(outputs=records, summary=self.summarize(manifest))

    def check(self, job: Job, manifest: dict[str, Any], access: OutputAccess) -> None:
        """Workload-specific checks beyond sizes and hashes. Raise PostprocessError."""

    def summarize(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """A few figures worth showing on the job (e.g. validation accuracy)."""
        return {}

    def follow_ons(self, job: Job) -> list[JobRequest]:
        """Jobs to start when this one succeeds; they inherit its backend and link to it."""
        return []

    def _verify(self, entry: dict[str, Any], access: OutputAccess, output: BlobLocation) -> OutputRecord:
        try:
            name, expected_size, expected_sha = f"outputs/{entry['name']}", int(entry["size"]), str(entry["sha256"])
        except (KeyError, TypeError, ValueError):
            raise PostprocessError(
                f"{self.manifest_path} is not a valid manifest: each file needs a name, a size and a sha256"
            ) from None
        if expected_size <= HASH_CHECK_MAX_BYTES:
            data = access.read_blob(name)  # one read gives the size and the hash
            size = None if data is None else len(data)
        else:
            data, size = None, access.blob_size(name)
        if size is None:
            raise PostprocessError(f"{name} is listed in the manifest but is not in blob storage")
        if size != expected_size:
            raise PostprocessError(f"{name} is {size} bytes in blob storage; the manifest says {expected_size}")
        if data is not None and hashlib.sha256(data).hexdigest() != expected_sha:
            raise PostprocessError(f"{name} does not match the sha256 in the manifest")
        return OutputRecord(name=name, blob=f"{output.container}/{output.child(name)}", size=size, sha256=expected_sha)


def spec_name(job_id: str) -> str:
    """The idempotency name every backend derives its provider ids from."""
    return f"haste-{job_id}"


def processors() -> dict[str, Processor]:
    """A processor per known workload, by name: a new dict (a runtime may swap one), the same processors.

    Raises:
        ConfigurationError: a workload's processor cannot be loaded, or is not that workload's.
    """
    return {name: _build(descriptor) for name, descriptor in descriptors().items()}


@functools.cache
def _build(descriptor: WorkloadDescriptor) -> Processor:
    module_name, _, attribute = descriptor.processor.partition(":")
    try:
        processor = getattr(importlib.import_module(module_name), attribute)()
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"Workload {descriptor.name!r}: processor {descriptor.processor!r} cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(processor, Processor) or processor.workload != descriptor.name:
        raise ConfigurationError(f"Workload {descriptor.name!r}: {descriptor.processor!r} is not its Processor")
    return processor
