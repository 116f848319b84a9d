"""A workload's exit, handled by the process that saw it (the local backend's thread that reaps it).

A nudge message on the poll queue waits for the next poll of that queue: up to the
host's ``maxPollingInterval`` (1 s) once the listener has backed off, which was most of a
short job's end→terminal time, and it costs three queue calls (send, receive, delete).
The process that saw the exit has everything the poll step needs, so it runs the step
at once, on a thread of its own.

Nothing depends on it: the job's poll chain still follows the job and finds the end if
this process dies midway, and a step that fails here (storage unavailable, say) sends
the nudge message instead, so the queue's retries take over. Two processes that both
see one exit run the step twice, which the step allows (ETag-guarded writes; one
delivery post-processes).

An exit travels as data: the backend posts the job's id on an :class:`ExitChannel`
(built before the backends, which the poll step needs), and an :class:`ExitHandler`
built with the poll step takes it from there (:meth:`ExitHandler.serve`). Neither
holds a reference the other fills in later.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from hastegeo.store.queues import JobMessage
from hastegeo.telemetry.logs import job_fields

log = logging.getLogger(__name__)

Step = Callable[[JobMessage], None]


class ExitChannel:
    """Ids of jobs whose workload exited in this process, in the order they were seen."""

    def __init__(self) -> None:
        self._ids: queue.SimpleQueue[str] = queue.SimpleQueue()

    def post(self, job_id: str) -> None:
        """What the backend calls when a workload exits (``BackendContext.notify_exit``); never blocks."""
        self._ids.put(job_id)

    def take(self) -> str:
        """The next exit, waiting for one."""
        return self._ids.get()


class ExitHandler:
    """Run ``poll`` for a job whose workload exited, now; ``fallback`` (its nudge message) if that fails."""

    def __init__(self, poll: Step, fallback: Step) -> None:
        self._poll = poll
        self._fallback = fallback

    def serve(self, channel: ExitChannel) -> None:
        """Handle every exit posted on ``channel``, each on a thread of its own, for the life of the process."""

        def dispatch() -> None:
            while True:
                job_id = channel.take()
                try:
                    threading.Thread(
                        target=self.run, args=(job_id,), name=f"job-exit-{job_id[:12]}", daemon=True
                    ).start()
                except Exception:  # no thread to spare: the job's poll chain finds the exit
                    log.warning("job %s: its exit could not be handled here", job_id, exc_info=True)

        threading.Thread(target=dispatch, name="job-exits", daemon=True).start()

    def run(self, job_id: str) -> None:
        """Run the poll step for ``job_id``'s exit here; on any failure, hand it to the poll queue."""
        message = JobMessage(job_id=job_id, kind="nudge")
        try:
            self._poll(message)
            return
        except Exception as exc:  # the queue retries it; the poll chain remains behind both
            log.warning(
                "job %s: its exit could not be handled where it was seen (%s); sending it to the poll queue",
                job_id,
                type(exc).__name__,
                extra=job_fields(job_id=job_id),
            )
        try:
            self._fallback(message)
        except Exception as exc:
            log.warning(
                "job %s: the poll queue could not take its exit either (%s); its poll chain will find it",
                job_id,
                type(exc).__name__,
                extra=job_fields(job_id=job_id),
            )
