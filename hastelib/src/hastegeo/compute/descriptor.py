"""What the app knows about a backend without building it: one :class:`BackendDescriptor` per adapter package.

Standard library only: adapter packages export their descriptor from
``__init__``, and the registry imports every one of them to list the backends,
so listing them must not load a provider SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hastegeo.compute.context import BackendContext
    from hastegeo.compute.contract import ComputeBackend
    from hastegeo.config import Settings
    from hastegeo.settings_base import BackendSection

BackendFactory = Callable[["BackendContext"], "ComputeBackend"]


def _no_limits(settings: Settings, workloads: Iterable[str]) -> dict[str, str]:
    return {}


def _no_problem(settings: Settings) -> str | None:
    return None


@dataclass(frozen=True)
class BackendDescriptor:
    """What the app knows about a backend without building it.

    ``limits(settings, workloads)``: workload → why the backend cannot run it
    with these settings (what its ``submit`` would refuse), pure, so routing
    and ``GET /api/backends`` agree with the adapter. ``enable_problem``: why
    it must not be enabled at all with these settings (checked at start-up).
    ``section``: the :class:`~hastegeo.config.Settings` section it reads.
    """

    name: str
    factory: BackendFactory
    section: str | None = None
    limits: Callable[[Settings, Iterable[str]], dict[str, str]] = _no_limits
    enable_problem: Callable[[Settings], str | None] = _no_problem

    def workloads(self, settings: Settings, workloads: Iterable[str]) -> frozenset[str]:
        """The workloads this backend can run with ``settings``."""
        wanted = frozenset(workloads)
        return wanted - frozenset(self.limits(settings, wanted))

    @classmethod
    def for_section(cls, name: str, section: str, factory: str) -> BackendDescriptor:
        """A backend built by ``factory`` (``module:callable``) whose :class:`~hastegeo.settings_base.BackendSection`
        ``section`` of :class:`~hastegeo.config.Settings` answers ``limits`` and ``enable_problem``."""

        def of(settings: Settings) -> BackendSection:
            found: BackendSection = getattr(settings, section)
            return found

        def enable_problem(settings: Settings) -> str | None:
            problem = of(settings).enable_problem()
            return f"{name} is enabled (HASTE_BACKENDS_ENABLED) but {problem}" if problem else None

        return cls(name, lazy_factory(factory), section, lambda s, w: of(s).limits(w), enable_problem)


def lazy_factory(path: str) -> BackendFactory:
    """A factory that imports ``module:callable`` on first use (keeps provider SDKs out of start-up)."""

    def build(context: BackendContext) -> ComputeBackend:
        module_name, _, attribute = path.partition(":")
        try:
            factory: BackendFactory = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            from hastegeo.utils.errors import ConfigurationError

            raise ConfigurationError(f"Backend factory {path!r} cannot be loaded: {type(exc).__name__}: {exc}") from exc
        return factory(context)

    return build
