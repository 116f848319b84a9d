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

from hastegeo.models.job import Job, QueuedMessage
from hastegeo.settings.app import PipelineSettings
from hastegeo.store.queues import POLL_QUEUE, JobMessage, QueueSender


@dataclass(frozen=True)
class PendingPoll:
    """A poll-chain message just sent, as the job records it: to delete it early, and to know when it is due."""

    message: QueuedMessage | None
    due_at: datetime

    def fields(self) -> dict[str, Any]:
        return {"poll_message": self.message, "poll_due_at": self.due_at}


# A job's poll delay grows to at least this share of its age (since it started), up to its backend's longest:
# a job that has run for ten minutes is polled every five, one that has run for an hour at the longest.
AGE_SHARE = 0.5


class PollChain:
    def __init__(
        self,
        queues: QueueSender,
        settings: PipelineSettings,
        clock: Callable[[], datetime],
        longest: Callable[[str], float] | None = None,
    ) -> None:
        """``longest``: a backend's longest delay (``Settings.poll_max_s``); None: ``HASTE_POLL_MAX_S`` for all."""
        self._queues, self._settings, self._clock = queues, settings, clock
        self._longest = longest

    def delay(self, seq: int, job: Job | None = None) -> float:
        """Seconds until message number ``seq`` is due: growing from the first poll's to the longest.

        With ``job`` (on a backend), the delay also grows with the job's age (:data:`AGE_SHARE`), up to its
        backend's longest delay (ADR 0041): Batch and Azure ML jobs run for hours, and a poll costs 5 storage
        calls; the longest delay bounds how late the job's end is seen (an event nudges it sooner).
        """
        settings = self._settings
        grown = settings.poll_initial_s * settings.poll_backoff**seq
        if job is None or job.handle is None or self._longest is None:
            return float(min(grown, settings.poll_max_s))
        age = (self._clock() - (job.started_at or job.created_at)).total_seconds()
        return float(min(max(grown, age * AGE_SHARE), self._longest(job.handle.backend)))

    def send(self, job_id: str, seq: int, delay_s: float) -> PendingPoll:
        """Send the chain's message number ``seq``, visible after ``delay_s``."""
        sent = self._queues.send(POLL_QUEUE, JobMessage(job_id=job_id, kind="poll", poll_seq=seq), delay_s)
        return PendingPoll(sent, self._clock() + timedelta(seconds=delay_s))
