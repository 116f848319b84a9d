"""A runtime over storage that exists: Azurite starts empty, and only the development stack creates resources."""

from __future__ import annotations

from typing import Any

from hastegeo.runtime import Runtime, build_runtime, ensure_storage
from hastegeo.settings.app import Settings


def development_runtime(settings: Settings, **options: Any) -> Runtime:
    """:func:`build_runtime` after creating the containers and queues ``settings`` name (as IaC does in Azure)."""
    ensure_storage(settings)
    return build_runtime(settings, **options)
