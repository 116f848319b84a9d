"""A toy backend in one folder: how a third-party backend plugs in (docs/adr/0009-one-backend-contract.md).

This folder is what an installed distribution looks like on ``sys.path``: the
package and its ``*.dist-info`` whose ``entry_points.txt`` registers
:data:`DESCRIPTOR` in the ``hastegeo.backends`` group. Put the folder on the
path (``pip install`` does the same for a real one) and the backend is known
to settings, routing, ``GET /api/backends``, the API and the CLI.

The toy keeps its jobs in memory and never finishes them; it runs only
``artifacts`` workloads, and says why it takes no other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

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


class ToyBackend(ComputeBackend):
    name: ClassVar[str] = "toy"
    submitted: ClassVar[dict[str, ComputeJobSpec]] = {}  # by spec name, across instances (tests look here)

    def __init__(self, context: BackendContext) -> None:
        self._clock = context.clock

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


def _limits(settings: Any, workloads: Iterable[str]) -> dict[str, str]:
    return {workload: "the toy runs artifacts only" for workload in workloads if workload != "artifacts"}


DESCRIPTOR = BackendDescriptor(name="toy", factory=ToyBackend, limits=_limits)
