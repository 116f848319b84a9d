"""The whole compute contract: what every backend is given, must answer, and may offer (ADR 0009)."""

from __future__ import annotations

import abc
import enum
from datetime import datetime
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from hastegeo.compute import fingerprint as _fingerprint
from hastegeo.compute.capacity import CapacityWait
from hastegeo.costs.usage import Usage


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)


class BlobLocation(_Frozen):
    """A container and a path (a blob name, or a prefix without trailing slash)."""

    container: str
    path: str

    def child(self, relative: str) -> str:
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
    upload_patterns: tuple[str, ...] = ("outputs/**", "logs/**")
    resources: Resources = Resources()
    time_limit_s: int = 3600
    retry_budget: int = 0
    labels: dict[str, str] = Field(default_factory=dict)
    profile: str | None = Field(None, description="A declared compute profile (ADR 0043); None: 'default'.")

    @property
    def argv(self) -> tuple[str, ...]:
        return self.entrypoint + self.args

    def fingerprint(self) -> str:  # what makes a submission *this* one on every backend; stored with its job
        return _fingerprint.fingerprint(self)

    def is_same_submission(self, stored: str | None) -> bool:
        """Whether a job that carries fingerprint ``stored`` is this submission (legacy form: :mod:`.fingerprint`)."""
        return stored is not None and stored in _fingerprint.accepted(self)


class ComputeJobHandle(_Frozen):
    """How to find the provider's job again (server-owned). ``notes``: what the operator should know."""

    backend: str
    provider_ids: dict[str, str]
    output: BlobLocation = BlobLocation(container="", path="")  # empty: found by a listing (cancel needs none)
    submitted_at: datetime
    notes: str | None = None


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
    state: ComputeState
    exit_code: int | None = None
    reason: str | None = None  # why it failed or was cancelled
    detail: str | None = None  # a short note that changes when something deserves a history line
    progress: float | None = None
    capacity: CapacityWait | None = None  # queued: why there is no compute yet (see compute/capacity.py)
    usage: Usage | None = None  # what it ran on, run by run, for its cost (costs/usage.py); None: not told


class OutputRead(_Frozen):
    """A file from the provider: ``data``, or None and why it could not serve it (None: no such file)."""

    data: bytes | None
    unavailable_reason: str | None = None


class StreamRead(_Frozen):
    """A stream of one run (``run``: 0 the first; a requeue or retry starts one) as the backend answered.

    ``data``: the asked run's bytes from the offset, None when it cannot serve them now; ``why``: why the
    current run started, when it is not the first (docs/adr/0045)."""

    run: int = 0
    why: str | None = None
    data: bytes | None = None


class ComputeBackend(abc.ABC):
    """One backend. ``submit`` binds a repeat to a job ``is_same_submission`` accepts; ``status`` raises only
    Transient/TerminalBackendError; ``cancel`` of a finished job is fine; ``cleanup`` is best-effort and
    skips a node a read found gone (``unavailable_reason``); ``list_active``: (our job id, handle) still
    running. Optional capabilities are the methods with bodies: their defaults are safe."""

    name: ClassVar[str]
    # ``status`` still reports an ended job the same way after ``cleanup`` (post-processing may re-run from it).
    status_outlives_cleanup: ClassVar[bool] = False

    @abc.abstractmethod
    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle: ...

    @abc.abstractmethod
    def status(self, handle: ComputeJobHandle) -> ComputeStatus: ...

    @abc.abstractmethod
    def read_output(self, handle: ComputeJobHandle, path: str) -> OutputRead: ...

    @abc.abstractmethod
    def cancel(self, handle: ComputeJobHandle) -> None: ...

    @abc.abstractmethod
    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> None: ...

    @abc.abstractmethod
    def list_active(self) -> list[tuple[str, ComputeJobHandle]]: ...

    # Copy an ended job's outputs/** and logs/** to its blob prefix, where the provider does not.
    def collect_outputs(self, handle: ComputeJobHandle) -> None: ...

    # A growing file's bytes from ``offset`` on (at most ``limit``), when cheap to serve; None: follow it by blob
    # instead. ``logs/stdout.txt`` and ``logs/stderr.txt`` are the workload's streams wherever the backend keeps them.
    def read_output_tail(
        self, handle: ComputeJobHandle, path: str, offset: int, limit: int = 64 * 1024
    ) -> bytes | None: ...

    # stdout or stderr (``path``) of run ``run`` from ``offset``, and which run is under way now; None: the backend
    # cannot tell. A backend whose jobs run once serves run 0 with ``read_output_tail``.
    def read_stream(self, handle: ComputeJobHandle, path: str, run: int, offset: int, limit: int) -> StreamRead | None:
        return StreamRead(data=self.read_output_tail(handle, path, offset, limit) if run == 0 else None)

    # Release clients and threads (the registry's owner calls this at shutdown).
    def close(self) -> None: ...
