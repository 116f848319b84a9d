"""The Azure Batch backend: one Batch job with one task per submission (see :mod:`.adapter`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hastegeo.compute.descriptor import BackendDescriptor, lazy_factory

if TYPE_CHECKING:
    from hastegeo.config import Settings


def _limits(settings: Settings, workloads: Iterable[str]) -> dict[str, str]:
    return settings.batch.limits(workloads)


def _enable_problem(settings: Settings) -> str | None:
    if settings.batch.account_url:
        return None
    return "azure_batch is enabled (HASTE_BACKENDS_ENABLED) but BATCH_ACCOUNT_URL is empty"


DESCRIPTOR = BackendDescriptor(
    name="azure_batch",
    factory=lazy_factory("hastegeo.compute.azure_batch.adapter:create"),
    section="batch",
    limits=_limits,
    enable_problem=_enable_problem,
)
