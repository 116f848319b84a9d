"""The registry that builds each enabled backend once, from the descriptors :mod:`.catalog` lists.

Adapters import their provider SDK, which can take a second (azure-ai-ml), so
a descriptor's factory imports the adapter only when the backend is first
used. Construction runs outside the registry's lock: a slow or re-entrant
constructor must not serialize every other submission, and two threads racing
to build the same adapter simply keep the first one stored.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from hastegeo.compute.descriptor import BackendDescriptor
from hastegeo.utils.errors import BackendUnavailableError, ConfigurationError, HasteError

if TYPE_CHECKING:
    from hastegeo.compute.context import BackendContext
    from hastegeo.compute.contract import ComputeBackend


class BackendRegistry:
    """The enabled backends of this process, each built once on first use."""

    def __init__(
        self, known: Iterable[BackendDescriptor], enabled: Iterable[str], contexts: Mapping[str, BackendContext]
    ) -> None:
        """``contexts``: per backend name, what its factory is given (its own section and the outside world)."""
        self.descriptors = {descriptor.name: descriptor for descriptor in known}
        self.enabled = frozenset(enabled)
        self.contexts = contexts
        self._instances: dict[str, ComputeBackend] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> ComputeBackend:
        """The adapter for ``name``, built on first use.

        Raises:
            BackendUnavailableError: the backend is unknown or not enabled.
            ConfigurationError: its module or factory cannot be loaded or fails.
        """
        descriptor = self.descriptors.get(name)
        if descriptor is None:
            raise BackendUnavailableError(f"Unknown backend {name!r}", backend=name)
        if name not in self.enabled:
            raise BackendUnavailableError(f"Backend {name!r} is not enabled", backend=name)
        with self._lock:
            cached = self._instances.get(name)
        if cached is not None:
            return cached
        instance = _build(descriptor, self.contexts[name])  # outside the lock, on purpose
        with self._lock:
            kept = self._instances.setdefault(name, instance)
        if kept is not instance:  # another thread won the race: release what we built
            instance.close()
        return kept

    def built(self) -> dict[str, ComputeBackend]:
        """The adapters constructed so far (for shutdown, diagnostics and the reconciler)."""
        with self._lock:
            return dict(self._instances)


def _build(descriptor: BackendDescriptor, context: BackendContext) -> ComputeBackend:
    try:
        return descriptor.factory(context)
    except HasteError:  # ConfigurationError names the setting (or the factory that cannot be loaded)
        raise
    except Exception as exc:
        raise ConfigurationError(f"Backend {descriptor.name!r} failed to start: {type(exc).__name__}: {exc}") from exc
