"""A job's stdout or stderr by offset, while it runs and after it ended (docs/adr/0045).

The backend's own copy answers first (:meth:`ExecutionService.read_output_tail`: the local
job's file, the Batch node by byte range, Azure ML's job log); when it cannot, the blob copy
under the job's output prefix does (a Batch node that is gone, a local job cleaned up after
its end). Both are the same bytes, so an offset means the same in either, and a reader may
move between them from one call to the next. What goes out is whole lines, redacted
(:mod:`hastegeo.compute.logtext`).

Nothing here runs unless someone reads: the pipeline's storage calls per job are unchanged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from azure.storage.blob import BlobServiceClient

from hastegeo.compute.logtext import STREAMS, WINDOW_BYTES, next_part
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
    """Reads a job's streams: the backend first, then the blob copy through ``blobs`` (the caller's client)."""

    def __init__(self, service: ExecutionService, blobs: BlobServiceClient, window: int = WINDOW_BYTES) -> None:
        self._service = service
        self._blobs = blobs
        self._window = window

    def read(self, job: Job, stream: str, offset: int) -> LogPage:
        """The part of ``stream`` (a key of :data:`STREAMS`) of ``job`` from byte ``offset``.

        ``job`` is as stored *before* the read: when it had ended then, the log was complete.
        Storage errors of the blob read propagate (the API answers 503).
        """
        path = STREAMS[stream]
        ended_before = job.state.terminal
        data: bytes = b""
        source: Source = "none"
        handle = job.handle
        if handle is not None:
            served = self._service.read_output_tail(handle, path, offset, self._window)
            if served is not None:
                data, source = served, "backend"
            else:
                blob = self._blobs.get_blob_client(handle.output.container, handle.output.child(path))
                copied = read_range(blob, offset, self._window)
                if copied is not None:
                    data, source = copied, "blob"
        final = ended_before and len(data) < self._window
        part = next_part(data, offset, final=final, window=self._window)
        if source == "none" and offset:
            log.info("job %s: no copy of %s answered at offset %d", job.id, path, offset)
        return LogPage(
            job_id=job.id,
            stream=stream,
            offset=offset,
            next_offset=part.next_offset,
            text=part.text,
            ended=final,
            source=source,
            state=job.state.value,
        )
