"""How post-processing reads a finished job's files: the provider first, the blob copy as fallback.

The composition root (:mod:`hastegeo.runtime`) builds one :class:`OutputReader`
from the process's blob client and execution service; the poll step asks it for
an :class:`~hastegeo.processors.base.OutputAccess` per job, so the step holds no
storage client of its own and a test can hand it a reader over other clients.
"""

from __future__ import annotations

from collections.abc import Callable

from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import BlobServiceClient

from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.compute.service import ExecutionService
from hastegeo.processors.base import OutputAccess
from hastegeo.telemetry import meter


class OutputReader:
    """Opens an :class:`OutputAccess` over one job's output location."""

    def __init__(self, blobs: BlobServiceClient, service: ExecutionService) -> None:
        self._blobs = blobs
        self._service = service

    def open(self, handle: ComputeJobHandle, notes: Callable[[str], None], gone: Callable[[str], None]) -> OutputAccess:
        """Access to ``handle``'s outputs.

        ``notes`` receives what the operator should read (a fallback was used);
        ``gone`` receives why the provider could not serve a file (so cleanup
        need not touch that node).

        Blob reads are cached for the life of the access: checks read the same
        small files more than once (the manifest, then a workload's own check).
        """
        container = self._blobs.get_container_client(handle.output.container)

        def blob_size(path: str) -> int | None:
            try:
                return int(container.get_blob_client(handle.output.child(path)).get_blob_properties().size)
            except ResourceNotFoundError:
                return None

        cache: dict[str, bytes | None] = {}

        def read_blob(path: str) -> bytes | None:
            if path not in cache:
                try:
                    cache[path] = container.download_blob(handle.output.child(path)).readall()
                except ResourceNotFoundError:
                    cache[path] = None
            return cache[path]

        unreadable: dict[str, str] = {}  # path → why neither copy could be read (both causes)

        def read(path: str) -> bytes | None:
            served = self._service.read_output(handle, path)
            for line, kept in ((served.fallback_note, notes), (served.unavailable_reason, gone)):
                if line:
                    kept(line)
            if served.unreadable:
                unreadable[path] = served.unreadable
            if served.from_blob and served.data is not None:
                meter.blob_fallback(handle.backend)
            return served.data

        return OutputAccess(read=read, blob_size=blob_size, read_blob=read_blob, unreadable=unreadable.get)
