"""The local backend: each job a real process group on this machine (see :mod:`.adapter`).

The adapter is this package; the machine side it drives (the jobs' folders, the
queue for slots, each job's process) is :mod:`hastegeo.compute.local_node`.
Its settings are :class:`.settings.LocalSettings`.
"""

from __future__ import annotations

from hastegeo.compute.descriptor import BackendDescriptor, lazy_factory
from hastegeo.compute.local.settings import LocalSettings

DESCRIPTOR = BackendDescriptor(
    name="local", factory=lazy_factory("hastegeo.compute.local.adapter:create"), settings=LocalSettings
)
