"""The backend-neutral compute contract: what every backend is given and must answer.

A backend receives a :class:`ComputeJobSpec`, returns a :class:`ComputeJobHandle`
that is enough to find the provider's job again, and reports a
:class:`ComputeStatus` as data, never as an exception. Outputs always land
under the spec's :class:`BlobLocation` as ``outputs/…`` and ``logs/…``, so
post-processing and the blob fallback are the same on every backend.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

WORKLOADS: tuple[str, ...] = ("imagery", "training", "inference", "embedding", "artifacts")
UPLOAD_PATTERNS: tuple[str, ...] = ("outputs/**", "logs/**")
WORKDIR_VARIABLE = "HASTE_JOB_WORKDIR"
# Older images read Batch's name for the working directory; every backend exports both.
LEGACY_WORKDIR_VARIABLE = "AZ_BATCH_TASK_WORKING_DIR"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)


class BlobLocation(_Frozen):
    """A container and a path (a blob name, or a prefix without trailing slash)."""

    container: str
    path: str

    def child(self, relative: str) -> str:
        """The blob name of ``relative`` under this location."""
        return f"{self.path.rstrip('/')}/{relative.lstrip('/')}" if self.path else relative


class InputFile(_Frozen):
    """A blob (or every blob under a prefix) staged into ``inputs/<dest>`` before the workload starts."""

    source: BlobLocation
    dest: str
    is_prefix: bool = False


class Resources(_Frozen):
    cpu: float = 1.0
    memory_gb: float = 2.0
    gpu: int = 0


class ComputeJobSpec(_Frozen):
    """Everything a backend needs to run one job, and nothing specific to any backend."""

    job_id: str
    name: str = Field(description="Idempotency name derived from the job id; provider ids derive from it.")
    workload: str
    image: str | None = None
    entrypoint: tuple[str, ...] = Field(description="argv; a leading 'python' means the runtime's interpreter")
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    inputs: tuple[InputFile, ...] = ()
    output: BlobLocation
    upload_patterns: tuple[str, ...] = UPLOAD_PATTERNS
    resources: Resources = Resources()
    time_limit_s: int = 3600
    retry_budget: int = 0
    labels: dict[str, str] = Field(default_factory=dict)

    @property
    def argv(self) -> tuple[str, ...]:
        return self.entrypoint + self.args


class ComputeJobHandle(_Frozen):
    """What a backend needs to find its job again. Server-owned: never accepted from a client."""

    backend: str
    provider_ids: dict[str, str]
    output: BlobLocation
    submitted_at: datetime


class ComputeState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (ComputeState.SUCCEEDED, ComputeState.FAILED, ComputeState.CANCELLED)


class ComputeStatus(_Frozen):
    """A backend's answer to "how is it going?": data, never an exception.

    ``detail`` is a short readable note that changes when something worth a
    history line happens (``waiting for a node``, ``task requeued after
    preemption``); ``reason`` explains a failure or cancellation.
    """

    state: ComputeState
    exit_code: int | None = None
    reason: str | None = None
    detail: str | None = None
    progress: float | None = None


class BackendCapabilities(_Frozen):
    """What the router may send to a backend, known without constructing it."""

    workloads: frozenset[str]
    gpu: bool = False


@runtime_checkable
class ComputeBackend(Protocol):
    """The small interface each backend implements. Orchestration lives elsewhere.

    - ``submit`` is idempotent: a repeat with the same ``spec.name`` binds to
      the provider job that already exists, and never starts a second one.
    - ``status`` reports; it raises only :class:`TransientBackendError` (try again
      later) or :class:`TerminalBackendError` (the handle is unusable).
    - ``read_output`` returns ``None`` when the provider cannot serve the file
      (node gone, file missing); callers then read the blob copy.
    - ``cancel`` of a finished job is not an error; ``cleanup`` is best-effort
      and never raises for resources that are already gone.

    Optional capabilities, found with ``getattr``:

    - ``last_unavailable_reason(handle) -> str | None``: the readable reason the
      provider could not serve the last file asked for; the pipeline shows it
      in the history when the blob copy was used instead.
    - ``read_output_tail(handle, path, offset) -> bytes | None``: the bytes of a
      file from ``offset`` on, so a running job's progress log can be followed
      without reading it whole on every poll.
    - ``list_active() -> list[tuple[str, ComputeJobHandle]]``: the provider jobs
      this backend is still running, by our job id, so the reconciler can stop
      those whose record has ended or is gone.
    """

    name: ClassVar[str]

    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle: ...

    def status(self, handle: ComputeJobHandle) -> ComputeStatus: ...

    def read_output(self, handle: ComputeJobHandle, path: str) -> bytes | None: ...

    def cancel(self, handle: ComputeJobHandle) -> None: ...

    def cleanup(self, handle: ComputeJobHandle) -> None: ...
