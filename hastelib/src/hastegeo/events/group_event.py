"""The ``com.haste.group.completed`` CloudEvent: a group's last item ended (pure; docs/events.md, ADR 0040)."""

from __future__ import annotations

from typing import Any

from hastegeo.events.cloudevent import DATA_CONTENT_TYPE, SOURCE_PREFIX, SPEC_VERSION
from hastegeo.models.group import Group

GROUP_COMPLETED = "com.haste.group.completed"
DATA_VERSION = 1


def completed(group: Group) -> dict[str, Any]:
    """The event; its ``id`` is the group's id and its completion time, the same on every delivery."""
    assert group.completed_at is not None
    counts = group.counts()
    return {
        "specversion": SPEC_VERSION,
        "id": f"{group.id}.completed.{group.completed_at.isoformat()}",
        "source": SOURCE_PREFIX + group.project_id,
        "type": GROUP_COMPLETED,
        "subject": group.id,
        "time": group.completed_at.isoformat(),
        "datacontenttype": DATA_CONTENT_TYPE,
        "data": {
            "version": DATA_VERSION,
            "groupId": group.id,
            "projectId": group.project_id,
            "workload": group.workload,
            "itemCount": group.item_count,
            "counts": {name: counts[name] for name in ("succeeded", "failed", "cancelled")},
            "correlationId": group.correlation_id,
            "createdAt": group.created_at.isoformat(),
            "completedAt": group.completed_at.isoformat(),
            "links": {"group": f"/api/groups/{group.id}"},
        },
    }
