"""The imagery workload's processor: its spec before compute, the checks of its outputs after."""

from __future__ import annotations

from hastegeo.compute.contract import Resources
from hastegeo.workloads.geospatial import GeoProcessor
from hastegeo.workloads.imagery.params import ImageryParams


class ImageryProcessor(GeoProcessor):
    workload = "imagery"
    params_model = ImageryParams
    resources = Resources(cpu=2, memory_gb=4)
