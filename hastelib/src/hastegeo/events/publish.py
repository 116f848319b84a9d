"""Send a job's pending events: each to the ``jobs-events`` queue, and as one batch to Event Grid.

The job store calls :class:`EventPublisher` right after the write that stored the changes
(and the reconciler's sweep, for changes whose writer could not); see ADR 0024. Queue
messages go one event each, oldest first, as plain JSON text (the queue's consumers read
them with any storage client). A failure raises :class:`AzureError`; the store then leaves
the events unpublished, to be sent again later, so a consumer may see an event more than
once (the ``id`` says so) but never one for a change that was not stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from hastegeo.events import cloudevent
from hastegeo.models.changes import StateChange
from hastegeo.models.job import Job
from hastegeo.store.queues import EVENTS_QUEUE, QueueSender


class Topic(Protocol):
    """Somewhere that takes a batch of CloudEvents (:class:`hastegeo.events.eventgrid.EventGridTopic`)."""

    def send(self, events: Sequence[dict[str, object]]) -> None: ...


class EventPublisher:
    """The store's ``publish`` callable: the queue always, the topic when one is configured."""

    def __init__(self, queues: QueueSender, topic: Topic | None = None) -> None:
        self._queues = queues
        self._topic = topic

    def __call__(self, job: Job, changes: list[StateChange]) -> None:
        self.send([cloudevent.build(job, change) for change in changes])

    def send(self, events: Sequence[dict[str, object]]) -> None:
        """Send CloudEvents as they are: the queue, then the topic. Raises AzureError.

        A job's state changes come through ``__call__``; others (a group's completion, a project's budget) here.
        """
        queue = self._queues.client(EVENTS_QUEUE)
        for event in events:
            queue.send_message(json.dumps(event, separators=(",", ":")))
        if self._topic is not None:
            self._topic.send(events)
