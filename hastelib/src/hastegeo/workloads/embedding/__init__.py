"""The embedding workload: turns building footprints into vectors (docs/workloads.md#embedding).

Light on purpose: compute imports this package before it runs ``run.py``.
"""

from __future__ import annotations

from hastegeo.workloads.descriptor import WorkloadDescriptor
from hastegeo.workloads.embedding.params import EmbeddingParams

DESCRIPTOR = WorkloadDescriptor(
    name="embedding",
    package=__name__,
    params=EmbeddingParams,
    processor=f"{__name__}.processor:EmbeddingProcessor",
    rank=40,
)
