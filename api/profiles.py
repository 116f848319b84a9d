"""The compute profiles part of ``GET /api/backends``: each backend's profiles and their schema (ADR 0043)."""

from __future__ import annotations

from typing import Any

from hastegeo.settings.fields import BackendSection
from hastegeo.workloads.registry import workload_names


def profile_views(section: BackendSection) -> list[dict[str, Any]]:
    """The profiles a backend offers with its current settings, ``default`` first, as the API shows them."""
    return [profile.api_view() for profile in section.profiles(workload_names()).values()]


def profiles_schema() -> dict[str, Any]:
    """The schema of a backend's ``profiles``, built anew each time: the document's builder moves titled
    objects into ``components`` in place, so a shared dict would be left pointing at a component of an
    earlier document."""
    return {
        "type": "array",
        "description": "The compute profiles the backend offers (a job names one as 'profile'), 'default' first",
        "items": {
            "title": "ComputeProfile",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "tier": {"type": "string", "enum": ["dedicated", "spot"]},
                "maxRunS": {
                    "type": ["integer", "null"],
                    "description": "The longest one run may take (s); null: the workload's own time limit",
                },
                "runsOn": {"type": "string", "description": "What it runs on: a pool, or a compute with its shape"},
                "workloads": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The workloads that may use it on this backend",
                },
                "description": {"type": "string"},
            },
        },
    }
