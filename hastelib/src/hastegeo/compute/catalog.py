"""The backends this app knows, one :class:`BackendDescriptor` each, listed without building any.

A backend is one folder: its package exports ``DESCRIPTOR`` (name, factory,
and its own settings section, which says what it can run under the current
settings and why not the rest). The built-in ones are listed here; any other is found
through the ``hastegeo.backends`` entry point group, so a new backend is
routable, listed by ``GET /api/backends`` and accepted by the API and the CLI
without another file changing (ADR 0009). Every other list of backend names
is derived from :func:`descriptors`.

Apart from :mod:`.registry`, which builds the adapters, so that the job models
can check a backend's name without importing what builds one (docs/adr/0037).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points

from hastegeo.compute.descriptor import BackendDescriptor
from hastegeo.utils.errors import ConfigurationError

ENTRY_POINT_GROUP = "hastegeo.backends"
BUILT_IN = ("hastegeo.compute.local", "hastegeo.compute.azure_batch", "hastegeo.compute.azure_ml")


@functools.cache
def descriptors() -> Mapping[str, BackendDescriptor]:
    """Every known backend by name: the built-in ones, then those registered as entry points."""
    found: list[BackendDescriptor] = [importlib.import_module(module).DESCRIPTOR for module in BUILT_IN]
    for point in entry_points(group=ENTRY_POINT_GROUP):
        loaded = point.load()
        if not isinstance(loaded, BackendDescriptor):
            raise ConfigurationError(f"Entry point {point.value!r} ({ENTRY_POINT_GROUP}) is not a BackendDescriptor")
        found.append(loaded)
    return {descriptor.name: descriptor for descriptor in found}


def backend_names() -> tuple[str, ...]:
    return tuple(descriptors())
