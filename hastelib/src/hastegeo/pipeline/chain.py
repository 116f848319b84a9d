"""The poll chain: one message at a time follows a job on its provider, each due later than the last.

The chain's messages carry a sequence number; the job records the number it expects
and when that message is due (:class:`PendingPoll`), so a duplicate is dropped and a
chain gone quiet is found by the reconciler (:func:`hastegeo.pipeline.reconcile.chain_quiet`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hastegeo.config import PipelineSettings
from hastegeo.models.job import QueuedMessage
from hastegeo.store.queues import POLL_QUEUE, JobMessage, QueueSender


@dataclass(frozen=True)
class PendingPoll:
    """A poll-chain message just sent, as the job records it: to delete it early, and to know when it is due."""

    message: QueuedMessage | None
    due_at: datetime

    def fields(self) -> dict[str, Any]:
        return {"poll_message": self.message, "poll_due_at": self.due_at}


class PollChain:
    def __init__(self, queues: QueueSender, settings: PipelineSettings, clock: Callable[[], datetime]) -> None:
        self._queues, self._settings, self._clock = queues, settings, clock

    def delay(self, seq: int) -> float:
        """Seconds until message number ``seq`` is due: growing from the first poll's to the longest."""
        settings = self._settings
        return float(min(settings.poll_initial_s * settings.poll_backoff**seq, settings.poll_max_s))

    def send(self, job_id: str, seq: int, delay_s: float) -> PendingPoll:
        """Send the chain's message number ``seq``, visible after ``delay_s``."""
        sent = self._queues.send(POLL_QUEUE, JobMessage(job_id=job_id, kind="poll", poll_seq=seq), delay_s)
        return PendingPoll(sent, self._clock() + timedelta(seconds=delay_s))
