"""One post-processing's reads of a finished job's files, and what each of them found.

The execution service returns every read as a value (:class:`~hastegeo.compute.service.ServedOutput`:
the provider's copy, the blob copy, or both causes); :class:`OutputReads` keeps those values, so
the finish step reads back what the operator should know (a fallback was used) and why the
provider could not serve a file (cleanup need not touch that node) from the reads themselves,
after the processor is done: nothing is handed in to be filled on the way.
"""

from __future__ import annotations

from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.compute.service import ExecutionService, ServedOutput
from hastegeo.telemetry import meter
from hastegeo.workloads.processor import OutputAccess


class OutputReads:
    """Reads of ``handle``'s files, provider first, for one post-processing; :attr:`access` is the processor's view.

    Blob-only reads are cached: checks read the same small files more than once (an
    output's size and hash, then a workload's own check of it).
    """

    def __init__(self, service: ExecutionService, handle: ComputeJobHandle) -> None:
        self._service = service
        self._handle = handle
        self._served: list[ServedOutput] = []  # every provider-first read, in order
        self._blobs: dict[str, bytes | None] = {}

    @property
    def access(self) -> OutputAccess:
        return OutputAccess(
            read=self.read, blob_size=self.blob_size, read_blob=self.read_blob, unreadable=self.unreadable
        )

    def read(self, path: str) -> bytes | None:
        """``path`` from the provider, else its blob copy (see :meth:`ExecutionService.read_output`)."""
        served = self._service.read_output(self._handle, path)
        self._served.append(served)
        if served.from_blob and served.data is not None:
            meter.blob_fallback(self._handle.backend)
        return served.data

    def read_blob(self, path: str) -> bytes | None:
        if path not in self._blobs:
            self._blobs[path] = self._service.read_blob(self._handle, path)
        return self._blobs[path]

    def blob_size(self, path: str) -> int | None:
        return self._service.blob_size(self._handle, path)

    def unreadable(self, path: str) -> str | None:
        """Why the last read of ``path`` found neither copy (both causes), or None."""
        return next((served.unreadable for served in reversed(self._served) if served.path == path), None)

    @property
    def notes(self) -> list[str]:
        """History lines for the files the blob copy served because the provider could not, once each."""
        return list(dict.fromkeys(served.fallback_note for served in self._served if served.fallback_note))

    @property
    def provider_gone(self) -> str | None:
        """Why the provider could not serve a file (the first such read), or None: it served or had none."""
        return next((served.unavailable_reason for served in self._served if served.unavailable_reason), None)
