"""The workloads this app knows, one :class:`WorkloadDescriptor` each, found by their folders (docs/adr/0037).

A workload is one folder: its package exports ``DESCRIPTOR`` (name, parameters,
processor). Every folder of this package whose name does not start with ``_``
is a workload, so a new built-in workload is a new folder and nothing else; a
workload shipped in another distribution is found through the
``hastegeo.workloads`` entry point group (``name = package:DESCRIPTOR``), as
backends are through ``hastegeo.backends`` (ADR 0009). Every list of workload
names is derived from :func:`descriptors`: the API's validation and its OpenAPI
enum, the CLI's choices, each backend's settings.

Listing imports the folders' ``__init__`` and parameter models only, so the
job models can check a workload's name here; a processor (which needs the job
models) is built by :func:`hastegeo.workloads.processor.processors` when the
pipeline first asks for it.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Mapping
from importlib.metadata import entry_points

from hastegeo.utils.errors import ConfigurationError
from hastegeo.workloads.descriptor import WorkloadDescriptor

ENTRY_POINT_GROUP = "hastegeo.workloads"
PACKAGE = "hastegeo.workloads"
# A workload's name is part of file names (outputs/<name>_manifest.json), labels and the image's entry point.
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _built_in() -> list[WorkloadDescriptor]:
    """The descriptor of every folder of this package, its name being the folder's."""
    found = []
    for module in pkgutil.iter_modules(importlib.import_module(PACKAGE).__path__):
        if module.ispkg and not module.name.startswith("_"):
            descriptor = _descriptor_of(importlib.import_module(f"{PACKAGE}.{module.name}"), module.name)
            if descriptor.name != module.name:
                raise ConfigurationError(f"Workload folder {module.name!r} declares the name {descriptor.name!r}")
            found.append(descriptor)
    return found


def _descriptor_of(loaded: object, where: str) -> WorkloadDescriptor:
    descriptor = getattr(loaded, "DESCRIPTOR", loaded)
    if not isinstance(descriptor, WorkloadDescriptor):
        raise ConfigurationError(f"Workload {where!r} has no WorkloadDescriptor (DESCRIPTOR)")
    return descriptor


@functools.cache
def descriptors() -> Mapping[str, WorkloadDescriptor]:
    """Every known workload by name, in listing order (``rank``, then name).

    Raises:
        ConfigurationError: a folder or entry point holds no descriptor, a name is not
            ``[a-z][a-z0-9_]*`` (at most 40 characters), or two workloads share one.
    """
    found = _built_in()
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.append(_descriptor_of(point.load(), f"{point.value} ({ENTRY_POINT_GROUP})"))
    known: dict[str, WorkloadDescriptor] = {}
    for descriptor in sorted(found, key=lambda d: (d.rank, d.name)):
        if not NAME.fullmatch(descriptor.name):
            raise ConfigurationError(f"Workload name {descriptor.name!r} is not [a-z][a-z0-9_]* (at most 40)")
        if descriptor.name in known:
            raise ConfigurationError(f"Two workloads are named {descriptor.name!r}")
        known[descriptor.name] = descriptor
    return known


def workload_names() -> tuple[str, ...]:
    """The names of every known workload, in listing order."""
    return tuple(descriptors())


def forget() -> None:
    """Read the workloads again on next use (tests that add or remove one)."""
    descriptors.cache_clear()
