"""The job events checked from ground truth: the stored job documents and the jobs-events queue, read directly.

Every stored state change must have its event (same id, type and sequence), and no event may exist
for a change that was not stored. Duplicates are allowed (at least once) and counted.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from azure.storage.blob import ContainerClient
from azure.storage.queue import QueueClient

from hastegeo.models.states import JobState

TERMINAL = frozenset(state.value for state in JobState if state.terminal)


@dataclass
class EventTruth:
    changes: int = 0  # state changes stored
    events: int = 0  # events read from the queue (duplicates included)
    missing: list[str] = field(default_factory=list)  # stored changes without an event
    phantoms: list[str] = field(default_factory=list)  # events without a stored change, or not matching it
    duplicates: int = 0
    # Unfinished jobs whose record says fewer published than exist. An ended job's record is its active
    # entry being gone (ADR 0024), which the store's check judges (ground_truth.store_after_sweep).
    unrecorded: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)  # jobs whose sequence numbers are not 1..n

    def problems(self) -> list[str]:
        return [*self.missing, *self.phantoms, *self.unrecorded, *self.gaps]


def stored_changes(jobs: ContainerClient) -> dict[str, tuple[dict[str, str], int | None]]:
    """Job id → ({event id: state} of its stored changes, events recorded as published), from the documents.

    The record is None for an ended job: its document does not hold it.
    """
    found: dict[str, tuple[dict[str, str], int | None]] = {}
    for blob in jobs.list_blobs(name_starts_with="jobs/"):
        document = json.loads(jobs.download_blob(blob.name).readall())
        changes = {f"{document['id']}.{c['seq']}": c["state"] for c in document.get("stateChanges", [])}
        ended = document["state"] in TERMINAL
        found[document["id"]] = (changes, None if ended else int(document.get("eventsPublished", 0)))
    return found


def read_events(queue: QueueClient) -> list[dict[str, Any]]:
    """Every event on the queue (each deleted once read), as a consumer would receive them."""
    events: list[dict[str, Any]] = []
    while batch := list(queue.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=60)):
        for message in batch:
            events.append(json.loads(message.content))
            queue.delete_message(message)
    return events


def check_events(jobs: ContainerClient, queue: QueueClient) -> EventTruth:
    truth = EventTruth()
    stored = stored_changes(jobs)
    events = read_events(queue)
    truth.events = len(events)
    seen = Counter(event["id"] for event in events)
    truth.duplicates = sum(count - 1 for count in seen.values())
    expected = {event_id: state for changes, _ in stored.values() for event_id, state in changes.items()}
    truth.changes = len(expected)
    for event in events:
        state = expected.get(event["id"])
        if state is None or event["type"] != f"com.haste.job.{state}" or event["data"]["state"] != state:
            truth.phantoms.append(f"event {event['id']} ({event['type']}) matches no stored change")
        elif (
            event["subject"] != event["data"]["jobId"]
            or event["id"] != f"{event['subject']}.{event['data']['sequence']}"
        ):
            truth.phantoms.append(f"event {event['id']}: subject, id and sequence disagree")
    truth.missing = [
        f"change {event_id} ({state}) has no event" for event_id, state in expected.items() if event_id not in seen
    ]
    for job_id, (changes, published) in stored.items():
        sequences = sorted(int(event_id.rsplit(".", 1)[1]) for event_id in changes)
        if sequences != list(range(1, len(sequences) + 1)):
            truth.gaps.append(f"job {job_id}: sequences {sequences}")
        if published is not None and published != len(sequences):
            truth.unrecorded.append(f"job {job_id}: {published} of {len(sequences)} recorded as published")
    return truth
