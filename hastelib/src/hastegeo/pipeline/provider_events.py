"""A provider's own word that a job ended, taken as a nudge to look at the job now (ADR 0048).

Azure ML publishes its runs' status changes through Event Grid; a deployment that
subscribes them to the provider-events queue turns "the end is seen within the
longest poll delay" (ten minutes for a job that has run for hours) into "seen in
seconds". Each backend that reads such events says how, in its descriptor
(``BackendDescriptor.ended_jobs``); this step asks each of them, and runs the poll
step for every job named, where the event arrived (as the local backend's exit
notice does, :mod:`hastegeo.pipeline.exits`), with a nudge message on the poll
queue as its fallback.

An event is never trusted for a job's state: the poll step asks the provider as
always. So a repeated event costs one look, an event for a job that is not ours
(or forged by someone who can write to the queue) costs a read that finds
nothing, and a lost event costs only time: the job's poll chain still follows it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from hastegeo.pipeline.exits import ExitHandler

log = logging.getLogger(__name__)

EndedJobs = Callable[[bytes], list[str]]


class ProviderEvents:
    def __init__(self, readers: Mapping[str, EndedJobs], handler: ExitHandler) -> None:
        """``readers``: backend name → what reads its events; ``handler`` runs the poll step (or its fallback)."""
        self._readers = dict(readers)
        self._handler = handler

    def handle(self, body: bytes) -> list[str]:
        """Look now at every job ``body``'s events say ended; their ids, in order. Never raises."""
        job_ids: list[str] = []
        for backend, read in self._readers.items():
            try:
                named = read(body)
            except Exception:  # a reader's bug must not turn every event into a poison message
                log.exception("provider events: the %s reader could not read a message", backend)
                continue
            job_ids.extend(job_id for job_id in named if job_id not in job_ids)
        if not job_ids:
            log.info("provider events: a message named no job of ours (%d bytes)", len(body))
        for job_id in job_ids:
            self._handler.run(job_id)
        return job_ids
