"""The embedding workload's processor: its spec before compute, the checks of its outputs after."""

from __future__ import annotations

from hastegeo.compute.contract import Resources
from hastegeo.workloads.embedding.params import EmbeddingParams
from hastegeo.workloads.geospatial import GeoProcessor


class EmbeddingProcessor(GeoProcessor):
    workload = "embedding"
    params_model = EmbeddingParams
    resources = Resources(cpu=2, memory_gb=4)
