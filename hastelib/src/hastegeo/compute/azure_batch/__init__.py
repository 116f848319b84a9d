"""The Azure Batch backend: one Batch job with one task per submission (see :mod:`.adapter`)."""

from __future__ import annotations

from hastegeo.compute.azure_batch.settings import BatchSettings
from hastegeo.compute.descriptor import BackendDescriptor, lazy_factory

DESCRIPTOR = BackendDescriptor(
    name="azure_batch", factory=lazy_factory("hastegeo.compute.azure_batch.adapter:create"), settings=BatchSettings
)
