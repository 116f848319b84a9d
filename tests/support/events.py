"""Read the ``jobs-events`` queue the way a consumer does: with the storage SDK, straight from the queue."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from azure.storage.queue import QueueClient

from hastegeo.store.queues import EVENTS_QUEUE


def events_client(connection_string: str) -> QueueClient:
    return QueueClient.from_connection_string(connection_string, EVENTS_QUEUE)


def drain(client: QueueClient) -> list[dict[str, Any]]:
    """Every event on the queue now, in arrival order; each is deleted once read (tests run one at a time)."""
    found: list[dict[str, Any]] = []
    while True:
        batch = list(client.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=30))
        if not batch:
            return found
        for message in batch:
            found.append(json.loads(message.content))
            client.delete_message(message)


def of_jobs(events: Iterable[dict[str, Any]], job_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """The events of each job, by job id, in arrival order."""
    wanted = set(job_ids)
    by_job: dict[str, list[dict[str, Any]]] = {job_id: [] for job_id in wanted}
    for event in events:
        if event.get("subject") in wanted:
            by_job[event["subject"]].append(event)
    return by_job
