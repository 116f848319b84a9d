"""Find, build once and cache the adapter for each backend.

Adapters import their provider SDK, which can take a second (azure-ai-ml),
so they are imported only when first used. Construction runs outside the
registry's lock: a slow or re-entrant constructor must not serialize every
other submission, and two threads racing to build the same adapter simply
keep the first one stored.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from hastegeo.compute.context import BackendContext
from hastegeo.compute.contract import ComputeBackend
from hastegeo.utils.errors import BackendUnavailableError, ConfigurationError, HasteError

AdapterFactory = Callable[[BackendContext], ComputeBackend]


@dataclass(frozen=True)
class BackendEntry:
    """How to build one backend: an import path ``module:callable`` or the callable itself."""

    name: str
    factory: str | AdapterFactory


# The production factories: each module exposes ``create(context) -> ComputeBackend``.
DEFAULT_FACTORIES: Mapping[str, str] = {
    "local": "hastegeo.compute.local.adapter:create",
    "azure_batch": "hastegeo.compute.azure_batch.adapter:create",
    "azure_ml": "hastegeo.compute.azure_ml.adapter:create",
}


class RunnerRegistry:
    def __init__(self, entries: Iterable[BackendEntry], enabled: Iterable[str], context: BackendContext) -> None:
        self._context = context
        self._entries = {entry.name: entry for entry in entries}
        self._enabled = frozenset(enabled)
        self._instances: dict[str, ComputeBackend] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> frozenset[str]:
        return self._enabled

    def get(self, name: str) -> ComputeBackend:
        """The adapter for ``name``, built on first use.

        Raises:
            BackendUnavailableError: the backend is unknown or not enabled.
            ConfigurationError: its module or factory cannot be loaded or fails.
        """
        entry = self._entries.get(name)
        if entry is None:
            raise BackendUnavailableError(f"Unknown backend {name!r}", backend=name)
        if name not in self._enabled:
            raise BackendUnavailableError(f"Backend {name!r} is not enabled", backend=name)
        with self._lock:
            cached = self._instances.get(name)
        if cached is not None:
            return cached
        instance = _build(entry, self._context)  # outside the lock, on purpose
        with self._lock:
            kept = self._instances.setdefault(name, instance)
        if kept is not instance:  # another thread won the race: release what we built
            close = getattr(instance, "close", None)
            if callable(close):
                close()
        return kept

    def built(self) -> dict[str, ComputeBackend]:
        """The adapters constructed so far (for shutdown and diagnostics)."""
        with self._lock:
            return dict(self._instances)


def _build(entry: BackendEntry, context: BackendContext) -> ComputeBackend:
    factory = entry.factory
    if isinstance(factory, str):
        module_name, _, attribute = factory.partition(":")
        try:
            module = importlib.import_module(module_name)
            factory = getattr(module, attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(
                f"Backend {entry.name!r} cannot be loaded from {entry.factory!r}: {type(exc).__name__}: {exc}"
            ) from exc
    try:
        adapter = factory(context)
    except HasteError:
        raise
    except Exception as exc:
        raise ConfigurationError(f"Backend {entry.name!r} failed to start: {type(exc).__name__}: {exc}") from exc
    return adapter
