"""The artifacts workload: packages jobs' outputs into one zip (docs/workloads.md#artifacts).

Light on purpose: compute imports this package before it runs ``run.py``.
"""

from __future__ import annotations

from hastegeo.workloads.artifacts.params import ArtifactsParams
from hastegeo.workloads.descriptor import WorkloadDescriptor

DESCRIPTOR = WorkloadDescriptor(
    name="artifacts",
    package=__name__,
    params=ArtifactsParams,
    processor=f"{__name__}.processor:ArtifactsProcessor",
    rank=50,
)
