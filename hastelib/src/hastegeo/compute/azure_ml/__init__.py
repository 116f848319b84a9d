"""The Azure ML backend: each job one command job named after our job id (see :mod:`.adapter`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hastegeo.compute.descriptor import BackendDescriptor, lazy_factory

if TYPE_CHECKING:
    from hastegeo.config import Settings


def _limits(settings: Settings, workloads: Iterable[str]) -> dict[str, str]:
    return settings.aml.limits(workloads)


def _enable_problem(settings: Settings) -> str | None:
    return None if settings.aml.enabled else "azure_ml is enabled (HASTE_BACKENDS_ENABLED) but AML_MODE is Disabled"


DESCRIPTOR = BackendDescriptor(
    name="azure_ml",
    factory=lazy_factory("hastegeo.compute.azure_ml.adapter:create"),
    section="aml",
    limits=_limits,
    enable_problem=_enable_problem,
)
