"""What the app knows about a backend without building it: one :class:`BackendDescriptor` per adapter package.

Standard library and the settings building blocks only: adapter packages export
their descriptor from ``__init__``, and the registry imports every one of them to
list the backends, so listing them must not load a provider SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hastegeo.settings.fields import BackendSection

if TYPE_CHECKING:
    from hastegeo.compute.context import BackendContext
    from hastegeo.compute.contract import ComputeBackend

BackendFactory = Callable[["BackendContext"], "ComputeBackend"]


@dataclass(frozen=True)
class BackendDescriptor:
    """What the app knows about a backend without building it.

    ``settings``: the backend's own section, declared in its folder. The app's
    settings are composed from every descriptor's (:mod:`hastegeo.settings.load`), and
    the section answers, from settings alone, what the backend cannot run
    (``limits``), why it must not be enabled (``enable_problem``) and how long a
    job may wait for its compute (``queue_limit``), so routing, ``GET /api/backends``
    and start-up agree with the adapter. The base :class:`BackendSection` has no
    fields and no limits: a backend with no settings of its own leaves it.

    ``ended_jobs``: for a provider that publishes its own status events to the
    provider-events queue, the job ids a message's events say have ended (a nudge
    to look now; ADR 0048). Pure and SDK-free: it runs on every such message.
    """

    name: str
    factory: BackendFactory
    settings: type[BackendSection] = BackendSection
    ended_jobs: Callable[[bytes], list[str]] | None = None


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
