"""The only code that calls backend adapters.

The pipeline asks this service to submit a spec on a named backend and then
dispatches every later call by the handle's backend, so a job keeps talking
to the backend that started it even if routing settings change meanwhile.
Reading an output tries the provider first and then the blob copy every
backend uploads, which is what lets a job finish after its node is gone; the
service reads that copy itself and returns what it found as a value
(:class:`ServedOutput`: the provider's copy, the blob copy, or why neither).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import BlobClient, BlobServiceClient

from hastegeo.compute.contract import ComputeBackend, ComputeJobHandle, ComputeJobSpec, ComputeStatus, StreamRead
from hastegeo.compute.registry import BackendRegistry
from hastegeo.utils.errors import BackendUnavailableError, HasteError, TransientBackendError, describe_exception

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServedOutput:
    """A file as the service found it: the provider's copy, else the blob copy, and why either failed.

    ``unavailable_reason`` is why the provider could not serve it (None: it
    simply has no such file), as the adapter returned it in its
    :class:`~hastegeo.compute.contract.OutputRead`: data, never a memo.
    """

    path: str
    data: bytes | None
    unavailable_reason: str | None = None
    blob_error: str | None = None
    from_blob: bool = False

    @property
    def fallback_note(self) -> str | None:
        """One history line when the blob copy served because the provider could not."""
        if self.data is None or not self.from_blob or not self.unavailable_reason:
            return None
        return (
            f"{self.path} read from blob storage because the compute node could not serve it: {self.unavailable_reason}"
        )

    @property
    def unreadable(self) -> str | None:
        """When neither copy served: one line naming both causes (see :func:`unreadable_reason`)."""
        if self.data is not None:
            return None
        return unreadable_reason(self.path, self.unavailable_reason, self.blob_error)


class ExecutionService:
    def __init__(self, registry: BackendRegistry, blobs: BlobServiceClient) -> None:
        self._registry = registry
        self._blobs = blobs  # where every backend uploads a job's files (its handle's output location)

    def submit(self, backend: str, spec: ComputeJobSpec) -> ComputeJobHandle:
        """Submit ``spec`` on ``backend``; a repeat binds to the same provider job."""
        handle = self._adapter(backend).submit(spec)
        if handle.backend != backend:
            raise BackendUnavailableError(
                f"Adapter for {backend!r} returned a handle for {handle.backend!r}", backend=backend
            )
        return handle

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        """The provider's status; an ended job's files are in blob storage before its end is reported.

        Raises:
            TransientBackendError: also when the job ended but its files could not be copied yet;
                the message says so, since the job's history and any deadline reason quote it.
        """
        adapter = self._adapter(handle.backend)
        status = adapter.status(handle)
        if status.state.terminal:
            try:
                adapter.collect_outputs(handle)
            except TransientBackendError as exc:
                raise TransientBackendError(
                    f"the workload ended ({status.state.value}), but its files are not in storage yet: {exc}",
                    backend=handle.backend,
                ) from exc
        return status

    def status_outlives_cleanup(self, backend: str) -> bool:
        """True when ``backend`` reports an ended job the same way after its cleanup (see the contract)."""
        return self._adapter(backend).status_outlives_cleanup

    def cancel(self, handle: ComputeJobHandle) -> None:
        self._adapter(handle.backend).cancel(handle)

    def cleanup(self, handle: ComputeJobHandle, unavailable_reason: str | None = None) -> str | None:
        """Best-effort cleanup. Returns a readable note when it failed, instead of raising.

        ``unavailable_reason``: a read of this job's files already found the
        provider's copy gone, so the backend need not touch that node again.
        """
        try:
            self._adapter(handle.backend).cleanup(handle, unavailable_reason)
        except Exception as exc:  # cleanup must never fail a finished job
            note = describe_exception(exc)
            log.warning("cleanup of %s on %s failed: %s", handle.provider_ids, handle.backend, note)
            return note
        return None

    def read_output(self, handle: ComputeJobHandle, path: str) -> ServedOutput:
        """``path`` (relative to the job's output prefix) from the provider, else from blob.

        A failing blob read is logged and kept as ``blob_error``; it never
        replaces the provider's reason.
        """
        try:
            read = self._adapter(handle.backend).read_output(handle, path)
            data, reason = read.data, read.unavailable_reason
        except HasteError as exc:
            data, reason = None, describe_exception(exc)
        if data is not None:
            return ServedOutput(path, data)
        try:
            data = self.read_blob(handle, path)
        except Exception as exc:
            served = ServedOutput(path, None, reason, blob_error=describe_exception(exc))
            log.warning("%s (backend %s)", served.unreadable, handle.backend)
            return served
        return ServedOutput(path, data, reason, from_blob=True)

    def read_blob(self, handle: ComputeJobHandle, path: str) -> bytes | None:
        """The blob copy of ``path`` (None: there is none); storage errors propagate."""
        try:
            return self._output_blob(handle, path).download_blob().readall()
        except ResourceNotFoundError:
            return None

    def blob_size(self, handle: ComputeJobHandle, path: str) -> int | None:
        """The size of the blob copy of ``path`` (None: there is none), without reading it."""
        try:
            return int(self._output_blob(handle, path).get_blob_properties().size)
        except ResourceNotFoundError:
            return None

    def _output_blob(self, handle: ComputeJobHandle, path: str) -> BlobClient:
        return self._blobs.get_blob_client(handle.output.container, handle.output.child(path))

    def read_output_tail(
        self, handle: ComputeJobHandle, path: str, offset: int, limit: int = 64 * 1024
    ) -> bytes | None:
        """New bytes of a growing file (at most ``limit``), if the backend can serve them cheaply; else None."""
        try:
            return self._adapter(handle.backend).read_output_tail(handle, path, offset, limit)
        except HasteError:
            return None

    def read_stream(self, handle: ComputeJobHandle, path: str, run: int, offset: int, limit: int) -> StreamRead | None:
        """Run ``run`` of a job's stdout or stderr from the backend, and the run under way (None: it cannot tell)."""
        try:
            return self._adapter(handle.backend).read_stream(handle, path, run, offset, limit)
        except HasteError:
            return None

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        """Provider jobs still running on the backends built so far."""
        return [item for backend in self.listing_backends() for item in self.list_active_on(backend)]

    def listing_backends(self) -> list[str]:
        """The backends built so far, by name; every backend can list its active provider jobs.

        The reconciler asks each one separately (:meth:`list_active_on`), so a
        backend that is down or refuses the listing costs only its own orphans.
        """
        return list(self._registry.built())

    def list_active_on(self, backend: str) -> list[tuple[str, ComputeJobHandle]]:
        """(our job id, handle) of every provider job still running on ``backend``; raises what the adapter raised."""
        adapter = self._registry.built().get(backend)
        return list(adapter.list_active()) if adapter is not None else []

    def _adapter(self, backend: str) -> ComputeBackend:
        return self._registry.get(backend)


def unreadable_reason(path: str, provider: str | None, blob: str | None) -> str:
    """One readable line: why neither the provider nor the blob copy of ``path`` could be read.

    ``provider`` is why the provider could not serve it (None: it simply has
    no such file); ``blob`` is why the blob read failed (None: no such blob).
    Both causes are named, the provider's first, so a failing fallback never
    masks the reason the node could not answer.
    """
    if provider is None and blob is None:
        return f"{path} was not found on the backend or in blob storage"
    first = f"the compute node could not serve it ({provider})" if provider else "it is not on the backend"
    second = f"the blob copy could not be read ({blob})" if blob else "it is not in blob storage"
    return f"{path} could not be read: {first}; {second}"
