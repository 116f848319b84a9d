"""The local backend: each job a real process group on this machine (see :mod:`.adapter`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hastegeo.compute.descriptor import BackendDescriptor, lazy_factory

if TYPE_CHECKING:
    from hastegeo.config import Settings


def _limits(settings: Settings, workloads: Iterable[str]) -> dict[str, str]:
    refusal = settings.local_refusal()
    return dict.fromkeys(workloads, refusal) if refusal else {}


DESCRIPTOR = BackendDescriptor(
    name="local", factory=lazy_factory("hastegeo.compute.local.adapter:create"), section="local", limits=_limits
)
