"""The imagery workload: mosaics, clips and previews GeoTIFFs (docs/workloads.md#imagery).

Light on purpose: compute imports this package before it runs ``run.py``.
"""

from __future__ import annotations

from hastegeo.workloads.descriptor import WorkloadDescriptor
from hastegeo.workloads.imagery.params import ImageryParams

DESCRIPTOR = WorkloadDescriptor(
    name="imagery", package=__name__, params=ImageryParams, processor=f"{__name__}.processor:ImageryProcessor", rank=10
)
