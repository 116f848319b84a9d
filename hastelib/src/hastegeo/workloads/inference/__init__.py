"""The inference workload: classifies a raster with a trained model (docs/workloads.md#inference).

Light on purpose: compute imports this package before it runs ``run.py``.
"""

from __future__ import annotations

from hastegeo.workloads.descriptor import WorkloadDescriptor
from hastegeo.workloads.inference.params import InferenceParams

DESCRIPTOR = WorkloadDescriptor(
    name="inference",
    package=__name__,
    params=InferenceParams,
    processor=f"{__name__}.processor:InferenceProcessor",
    rank=30,
)
