"""A job's stdout or stderr by offset, while it runs and after it ended (docs/adr/0045).

The backend's own copy answers first (:meth:`ExecutionService.read_stream`: the local
job's file, the Batch node by run and byte range, Azure ML's stream file or job log); when it
cannot, the blob copy under the job's output prefix does (a Batch node that is gone, a local job
cleaned up after its end). Both are the same bytes, so an offset means the same in either, and a
reader may move between them from one call to the next. An offset also names the run it belongs
to (:mod:`hastegeo.compute.logposition`): a requeue, a retry or a fail-over starts a new one.
What goes out is whole lines, redacted (:mod:`hastegeo.compute.logtext`).

Nothing here runs unless someone reads: the pipeline's storage calls per job are unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from azure.storage.blob import BlobServiceClient

from hastegeo.compute.contract import BlobLocation
from hastegeo.compute.logposition import Position, run_copy, run_separator, stage_separator
from hastegeo.compute.logtext import STREAMS, WINDOW_BYTES, LogPart, next_part
from hastegeo.compute.service import ExecutionService
from hastegeo.compute.transfer import read_range
from hastegeo.models.job import Job

log = logging.getLogger(__name__)

Source = Literal["backend", "blob", "none"]


@dataclass(frozen=True)
class LogPage:
    """The next part of one stream: ``text`` covers bytes ``[offset, next_offset)``.

    ``ended``: the job has ended and this part reached the end of its log; a follower stops.
    ``source``: who answered (the backend's copy, the blob copy, or nobody has the log yet).
    """

    job_id: str
    stream: str
    offset: int
    next_offset: int
    text: str
    ended: bool
    source: Source
    state: str

    def view(self) -> dict[str, object]:
        return {
            "jobId": self.job_id,
            "stream": self.stream,
            "offset": self.offset,
            "nextOffset": self.next_offset,
            "text": self.text,
            "ended": self.ended,
            "source": self.source,
            "state": self.state,
        }


class JobLogs:
    """Reads a job's streams: the backend first, then the blob copies through ``blobs`` (the caller's client).

    An offset is a :class:`~hastegeo.compute.logposition.Position`: the stage (backend) and run it
    belongs to, and its byte there. A run that is over is read from its copy to its end, then the
    reader is handed a separator line and the next run's first offset, so a follower neither misses
    nor repeats a line when the task is requeued or retried, or the job moves to another backend.
    """

    def __init__(
        self,
        service: ExecutionService,
        blobs: BlobServiceClient,
        output_of: Callable[[str], BlobLocation],
        window: int = WINDOW_BYTES,
    ) -> None:
        self._service = service
        self._blobs = blobs
        self._output_of = output_of  # a job's output prefix, for the copies of a backend it left
        self._window = window

    def read(self, job: Job, stream: str, offset: int) -> LogPage:
        """The part of ``stream`` (a key of :data:`STREAMS`) of ``job`` from ``offset``.

        ``job`` is as stored *before* the read: when it had ended then, the log was complete.
        Storage errors of the blob reads propagate (the API answers 503).
        """
        path = STREAMS[stream]
        at = Position.of(offset)
        stages = [*job.backends_left, job.backend]
        if at.stage >= len(stages):  # no such stage (a position from nowhere): nothing to read there
            return self._page(job, stream, at, LogPart("", at.byte), at, ended=job.state.terminal, source="none")
        output = job.handle.output if job.handle is not None else self._output_of(job.id)
        backend = stages[at.stage]
        if at.stage < len(stages) - 1:  # a backend the job left: its runs are over, only their copies remain
            if at.run < _runs(job, backend) - 1:
                return self._over(
                    job, stream, at, output, backend, path, at.next_run(), run_separator(at.run + 1, None)
                )
            moved = stage_separator(backend, stages[at.stage + 1])
            return self._over(job, stream, at, output, backend, path, at.next_stage(), moved)
        served = self._service.read_stream(job.handle, path, at.run, at.byte, self._window) if job.handle else None
        ended_before = job.state.terminal
        if served is not None:
            current = served.run
        elif ended_before:
            current = max(at.run, _runs(job, backend) - 1)
        else:
            current = at.run  # nobody can tell: the reader's run is taken for the current one
        if at.run < current:  # its run is over: the rest of its copy, then the next run
            why = run_separator(at.run + 1, served.why if served and at.run + 1 == current else None)
            return self._over(job, stream, at, output, backend, path, at.next_run(), why)
        if at.run > current:  # a run that has not started (a position from nowhere): nothing yet
            return self._page(job, stream, at, LogPart("", at.byte), at, ended=ended_before, source="none")
        data: bytes = b""
        source: Source = "none"
        if served is not None and served.data is not None:
            data, source = served.data, "backend"
        else:
            copied = self._current_copy(output, backend, at, path, final=ended_before)
            if copied is not None:
                data, source = copied, "blob"
        final = ended_before and len(data) < self._window
        part = next_part(data, at.byte, final=final, window=self._window)
        if source == "none" and at.byte:
            log.info("job %s: no copy of %s answered at offset %d", job.id, path, offset)
        return self._page(job, stream, at, part, at.at(part.next_offset), ended=final, source=source)

    def _over(
        self,
        job: Job,
        stream: str,
        at: Position,
        output: BlobLocation,
        backend: str,
        path: str,
        after: Position,
        why: str,
    ) -> LogPage:
        """The rest of a run that is over, from its copy; once read to its end, ``why`` and the run ``after``."""
        # From one byte early (was the last byte handed out a line's end?) to one past a window (is there more?).
        copied = self._copy(output, run_copy(backend, at.run, path), max(0, at.byte - 1), self._window + 2)
        source: Source = "none" if copied is None else "blob"
        data = (copied or b"")[1:] if at.byte else (copied or b"")
        if len(data) > self._window:
            part = next_part(data[: self._window], at.byte, final=False, window=self._window)
            return self._page(job, stream, at, part, at.at(part.next_offset), ended=False, source=source)
        part = next_part(data, at.byte, final=True, window=self._window)
        # The separator starts a line of its own: after the run's last line, handed out now or before.
        unterminated = not part.text.endswith("\n") if part.text else bool(at.byte and copied and copied[:1] != b"\n")
        text = part.text + ("\n" if unterminated else "") + why
        return self._page(job, stream, at, LogPart(text, part.next_offset), after, ended=False, source=source)

    def _current_copy(
        self, output: BlobLocation, backend: str, at: Position, path: str, *, final: bool
    ) -> bytes | None:
        """The blob copy of the run a reader is on when the backend did not serve it.

        The stream's own name (``path``) holds the last run's whole stream once the job ended (every
        backend uploads it at the end), and a first run's copy from before runs had their own names;
        else the run's copy (:func:`run_copy`) holds what readers got from the node.
        """
        own = run_copy(backend, at.run, path)
        names = [path, own] if final else [own, path] if at.run == 0 else [own]
        for name in names:
            copied = self._copy(output, name, at.byte, self._window)
            if copied is not None:
                return copied
        return None

    def _copy(self, output: BlobLocation, name: str, offset: int, limit: int) -> bytes | None:
        return read_range(self._blobs.get_blob_client(output.container, output.child(name)), offset, limit)

    @staticmethod
    def _page(
        job: Job, stream: str, at: Position, part: LogPart, then: Position, *, ended: bool, source: Source
    ) -> LogPage:
        return LogPage(
            job_id=job.id,
            stream=stream,
            offset=at.offset,
            next_offset=then.offset,
            text=part.text,
            ended=ended,
            source=source,
            state=job.state.value,
        )


def _runs(job: Job, backend: str) -> int:
    """How many runs ``backend`` counted for ``job`` (the pipeline keeps it with the job's usage); 0: not told."""
    return job.usage.counted.get(backend, 0) if job.usage is not None else 0
