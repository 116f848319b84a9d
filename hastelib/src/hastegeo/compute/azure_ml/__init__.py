"""The Azure ML backend: each job one command job named after our job id (see :mod:`.adapter`)."""

from __future__ import annotations

from hastegeo.compute.azure_ml.events import ended_jobs
from hastegeo.compute.azure_ml.settings import AmlSettings
from hastegeo.compute.descriptor import BackendDescriptor, lazy_factory

DESCRIPTOR = BackendDescriptor(
    name="azure_ml",
    factory=lazy_factory("hastegeo.compute.azure_ml.adapter:create"),
    settings=AmlSettings,
    ended_jobs=ended_jobs,
)
