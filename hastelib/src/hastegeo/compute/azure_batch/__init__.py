"""The Azure Batch backend: one Batch job with one task per submission (see :mod:`.adapter`)."""

from __future__ import annotations

from hastegeo.compute.descriptor import BackendDescriptor

DESCRIPTOR = BackendDescriptor.for_section("azure_batch", "batch", "hastegeo.compute.azure_batch.adapter:create")
