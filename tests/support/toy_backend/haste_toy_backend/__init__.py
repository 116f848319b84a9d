"""A toy backend in one folder: how a third-party backend plugs in (docs/adr/0009-one-backend-contract.md).

This folder is what an installed distribution looks like on ``sys.path``: the
package and its ``*.dist-info`` whose ``entry_points.txt`` registers
:data:`DESCRIPTOR` in the ``hastegeo.backends`` group. Put the folder on the
path (``pip install`` does the same for a real one) and the backend is known
to settings, routing, ``GET /api/backends``, the API and the CLI.

The toy keeps its jobs in memory and never finishes them. Its settings are
its own (:class:`ToySettings`, variables ``HASTE_TOY_*``): they join the app's
settings, start-up validation, the drift check and the settings table through
the descriptor alone. It runs the workloads ``HASTE_TOY_WORKLOADS`` names
(``artifacts`` by default), says why it takes no other, and moves a job on after
``HASTE_TOY_QUEUE_LIMIT_S``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from pydantic import Field, field_validator

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import (
    ComputeBackend,
    ComputeJobHandle,
    ComputeJobSpec,
    ComputeState,
    ComputeStatus,
    OutputRead,
)
from hastegeo.compute.descriptor import BackendDescriptor
from hastegeo.settings.fields import BackendSection, CsvList, queue_limit_field
from hastegeo.workloads.registry import workload_names


class ToySettings(BackendSection):
    workloads_run: CsvList = Field(
        ["artifacts"], alias="HASTE_TOY_WORKLOADS", description="Workloads the toy backend runs, e.g. artifacts."
    )
    queue_limit_s: int = queue_limit_field("HASTE_TOY_QUEUE_LIMIT_S", 60, "the toy")

    @field_validator("workloads_run")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(workload_names()))
        if unknown:
            raise ValueError(f"not workloads: {unknown}")
        return value

    def limits(self, workloads: Iterable[str]) -> dict[str, str]:
        runs = ", ".join(self.workloads_run) or "nothing"
        return {workload: f"the toy runs {runs} only" for workload in workloads if workload not in self.workloads_run}

    def enable_problem(self) -> str | None:
        return None if self.workloads_run else "HASTE_TOY_WORKLOADS is empty"

    def queue_limit(self) -> int:
        return self.queue_limit_s


class ToyBackend(ComputeBackend):
    name: ClassVar[str] = "toy"
    submitted: ClassVar[dict[str, ComputeJobSpec]] = {}  # by spec name, across instances (tests look here)

    def __init__(self, context: BackendContext) -> None:
        self._clock = context.clock
        self.settings = context.section(ToySettings)

    def submit(self, spec: ComputeJobSpec) -> ComputeJobHandle:
        self.submitted.setdefault(spec.name, spec)
        return ComputeJobHandle(
            backend=self.name, provider_ids={"name": spec.name}, output=spec.output, submitted_at=self._clock()
        )

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        return ComputeStatus(state=ComputeState.RUNNING, detail="toying with it")

    def read_output(self, handle: ComputeJobHandle, path: str) -> OutputRead:
        return OutputRead(data=None)

    def cancel(self, handle: ComputeJobHandle) -> None:
        self.submitted.pop(handle.provider_ids["name"], None)

    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> None:
        pass

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        return []


DESCRIPTOR = BackendDescriptor(name="toy", factory=ToyBackend, settings=ToySettings)
