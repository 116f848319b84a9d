"""The training workload: trains a pixel classifier from labelled polygons (docs/workloads.md#training).

Light on purpose: compute imports this package before it runs ``run.py``.
"""

from __future__ import annotations

from hastegeo.workloads.descriptor import WorkloadDescriptor
from hastegeo.workloads.training.params import TrainingParams

DESCRIPTOR = WorkloadDescriptor(
    name="training",
    package=__name__,
    params=TrainingParams,
    processor=f"{__name__}.processor:TrainingProcessor",
    rank=20,
)
