"""The app's settings, composed: the sections of :mod:`hastegeo.settings.app` and every registered backend's own.

:mod:`hastegeo.settings.app` knows no backend; each backend's folder declares its
section and names it in its descriptor (:mod:`hastegeo.compute.registry` finds
built-in and installed ones alike). This module is where the two meet, above
both, so a backend with settings changes no file outside its folder and its
entry point (docs/adr/0009, docs/adr/0029).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache

from hastegeo.compute.catalog import descriptors
from hastegeo.settings.app import CORE_SECTIONS, Settings, compose_settings
from hastegeo.settings.fields import BackendSection, Section


def backend_sections() -> dict[str, type[BackendSection]]:
    """Backend name → the section model its descriptor declares."""
    return {name: descriptor.settings for name, descriptor in descriptors().items()}


def sections() -> dict[str, type[Section]]:
    """Every section the app reads, by name: the core ones, then each backend's under the backend's name.

    The drift check and the settings table in ``docs/deploy.md`` read the declared variables from here.
    """
    return {**CORE_SECTIONS, **backend_sections()}


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build and validate :class:`~hastegeo.settings.app.Settings` from ``environ`` (default: the process environment).

    Raises:
        ConfigurationError: listing every invalid variable by name with the reason.
    """
    return compose_settings(os.environ if environ is None else environ, backend_sections())


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, loaded once (call ``get_settings.cache_clear()`` in tests)."""
    return load_settings()
