"""The Azure ML backend: each job one command job named after our job id (see :mod:`.adapter`)."""

from __future__ import annotations

from hastegeo.compute.descriptor import BackendDescriptor

DESCRIPTOR = BackendDescriptor.for_section("azure_ml", "aml", "hastegeo.compute.azure_ml.adapter:create")
