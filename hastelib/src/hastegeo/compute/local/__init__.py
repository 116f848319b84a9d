"""The local backend: each job a real process group on this machine (see :mod:`.adapter`).

The adapter is this package; the machine side it drives (the jobs' folders, the
queue for slots, each job's process) is :mod:`hastegeo.compute.local_node`.
"""

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
