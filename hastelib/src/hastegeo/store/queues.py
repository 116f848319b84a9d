"""Queue names and the pointer messages that travel on them.

A message only points at a job (``jobId``, kind, poll sequence, and the W3C
``traceparent`` of the step that sent it, so the job's trace continues on the
other side; docs/adr/0012); the stored job
is the truth. That keeps messages tiny, makes a duplicate delivery
harmless, and means no state can be overwritten by a stale message.
Messages are plain JSON text (``messageEncoding: none`` in host.json).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
from typing import Literal

from azure.core.exceptions import AzureError, ResourceExistsError, ResourceNotFoundError
from azure.storage.queue import QueueClient, QueueServiceClient
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from hastegeo.models.ids import ID_PATTERN
from hastegeo.models.job import QueuedMessage
from hastegeo.store import sends
from hastegeo.telemetry.tracer import current_traceparent

log = logging.getLogger(__name__)

SUBMIT_QUEUE = "jobs-submit"
POLL_QUEUE = "jobs-poll"
REQUESTS_QUEUE = "jobs-requests"
# Makes a group's items into jobs, a bounded chunk per message, and cancels them (ADR 0040).
GROUPS_QUEUE = "groups-make"
# Job events for consumers outside the app (docs/events.md); no trigger of the app reads it.
EVENTS_QUEUE = "jobs-events"
# A group item's first submit message (ADR 0040): on a queue of its own, so that a single job's submit is never
# read behind the thousands a large group's making puts on jobs-submit at once (fair share starts at that read).
ITEMS_SUBMIT_QUEUE = "groups-submit"
# Providers' own status events (Azure ML's, through an Event Grid subscription): nudges to look now (ADR 0048).
PROVIDER_EVENTS_QUEUE = "provider-events"
POISON_SUFFIX = "-poison"
ALL_QUEUES = (SUBMIT_QUEUE, POLL_QUEUE, REQUESTS_QUEUE, GROUPS_QUEUE, ITEMS_SUBMIT_QUEUE, PROVIDER_EVENTS_QUEUE)

MessageKind = Literal["submit", "poll", "nudge"]
LEGACY_POLL_SEQ_KEY = "attempt"  # the wire name of JobMessage.poll_seq before it was renamed
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")


class JobMessage(BaseModel):
    """A pointer to a job and the step to run.

    ``poll_seq`` is the poll chain's sequence number for ``poll`` messages: a
    message whose number is not the job's current one is a duplicate and is
    dropped. ``nudge`` messages (sent when a workload exits) never extend the
    chain.

    On the wire the number is ``pollSeq``. It was called ``attempt`` before,
    so decoding accepts that key (messages queued by the previous release) and
    encoding writes it too (the previous release reads messages this one
    sends while a deployment rolls over). Drop the old key one release later.
    """

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore", frozen=True)

    job_id: str = Field(pattern=ID_PATTERN)
    kind: MessageKind
    poll_seq: int = Field(0, ge=0, validation_alias=AliasChoices("pollSeq", "poll_seq", LEGACY_POLL_SEQ_KEY))
    # Optional both ways: the previous version ignores it (extra="ignore") and sends none.
    traceparent: str | None = None

    @field_validator("traceparent", mode="before")
    @classmethod
    def _traceparent_or_none(cls, value: object) -> str | None:
        """A malformed ``traceparent`` costs the trace link, never the job's message."""
        return value if isinstance(value, str) and _TRACEPARENT.fullmatch(value) else None

    def encode(self) -> str:
        """The message text, with the current span's ``traceparent`` unless one was set (none without a span)."""
        wire = self.model_dump(mode="json", by_alias=True, exclude={"traceparent"})
        wire[LEGACY_POLL_SEQ_KEY] = self.poll_seq
        traceparent = self.traceparent or current_traceparent()
        if traceparent:
            wire["traceparent"] = traceparent
        return json.dumps(wire, separators=(",", ":"))


class GroupMessage(BaseModel):
    """A pointer to a group and the chunk of its items to make (``make``) or cancel (``cancel``); or to a job or
    group that ended and the chunk of the jobs waiting for it to release (``release``: ``group_id`` is that
    upstream, ``resume_after`` the last dependent the previous chunk released; ADR 0047)."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore", frozen=True)

    group_id: str = Field(pattern=ID_PATTERN)
    kind: Literal["make", "cancel", "release"] = "make"
    start: int = Field(0, ge=0)
    resume_after: str | None = Field(None, pattern=ID_PATTERN)

    def encode(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True)


class QueueSender:
    """Sends pointer messages, creating each queue on first use."""

    def __init__(self, service: QueueServiceClient) -> None:
        self._service = service
        self._clients: dict[str, QueueClient] = {}
        self._lock = threading.Lock()

    def client(self, queue: str) -> QueueClient:
        with self._lock:
            client = self._clients.get(queue)
            if client is None:  # the queue exists: IaC made it (ensure_storage, for the development stack)
                client = self._clients[queue] = self._service.get_queue_client(queue)
            return client

    def create(self, queue: str) -> None:
        """Create ``queue`` unless it exists (the development stack's :func:`hastegeo.runtime.ensure_storage`)."""
        with contextlib.suppress(ResourceExistsError):
            self.client(queue).create_queue()

    def send(self, queue: str, message: JobMessage, delay_s: float = 0) -> QueuedMessage | None:
        """Send ``message``, visible after ``delay_s``. Returns what :meth:`delete` needs (None: not known).

        A message ready at once is announced to :mod:`hastegeo.store.sends` (the development host wakes the
        queue's listener; nothing listens in Azure)."""
        return self.send_text(queue, message.encode(), delay_s)

    def send_text(self, queue: str, text: str, delay_s: float = 0) -> QueuedMessage | None:
        visibility = max(0, min(round(delay_s), 7 * 24 * 3600))
        sent = self.client(queue).send_message(text, visibility_timeout=visibility or None)
        if not visibility:
            sends.sent(queue)  # ready now: a listener that backed off may look at once (ADR 0050)
        return QueuedMessage(id=sent.id, receipt=sent.pop_receipt) if sent.id and sent.pop_receipt else None

    def delete(self, queue: str, message: QueuedMessage) -> bool:
        """Delete a message sent earlier, before it arrives; best effort, one call.

        False when it could not be: received meanwhile (its receipt changed), gone, or
        storage did not answer. The message then arrives and its step finds nothing to do.
        """
        try:
            self.client(queue).delete_message(message.id, message.receipt)
        except ResourceNotFoundError:
            return False
        except AzureError as exc:  # a receipt that changed answers 400; an outage, anything
            log.info("queue %s: message %s not deleted (%s); it will arrive", queue, message.id, type(exc).__name__)
            return False
        return True
