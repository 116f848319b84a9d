"""The only code that calls backend adapters.

The pipeline asks this service to submit a spec on a named backend and then
dispatches every later call by the handle's backend, so a job keeps talking
to the backend that started it even if routing settings change meanwhile.
Reading an output tries the provider first and then the blob copy every
backend uploads, which is what lets a job finish after its node is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from hastegeo.compute.contract import ComputeBackend, ComputeJobHandle, ComputeJobSpec, ComputeStatus
from hastegeo.compute.registry import RunnerRegistry
from hastegeo.utils.errors import BackendUnavailableError, HasteError, describe_exception

log = logging.getLogger(__name__)

# Reads ``container/blob`` and returns the bytes, or None when it does not exist.
BlobReader = Callable[[str, str], "bytes | None"]


class ExecutionService:
    def __init__(self, registry: RunnerRegistry, read_blob: BlobReader) -> None:
        self._registry = registry
        self._read_blob = read_blob

    def submit(self, backend: str, spec: ComputeJobSpec) -> ComputeJobHandle:
        """Submit ``spec`` on ``backend``; a repeat binds to the same provider job."""
        handle = self._adapter(backend).submit(spec)
        if handle.backend != backend:
            raise BackendUnavailableError(
                f"Adapter for {backend!r} returned a handle for {handle.backend!r}", backend=backend
            )
        return handle

    def status(self, handle: ComputeJobHandle) -> ComputeStatus:
        return self._adapter(handle.backend).status(handle)

    def cancel(self, handle: ComputeJobHandle) -> None:
        self._adapter(handle.backend).cancel(handle)

    def cleanup(self, handle: ComputeJobHandle) -> str | None:
        """Best-effort cleanup. Returns a readable note when it failed, instead of raising."""
        try:
            self._adapter(handle.backend).cleanup(handle)
        except Exception as exc:  # cleanup must never fail a finished job
            note = describe_exception(exc)
            log.warning("cleanup of %s on %s failed: %s", handle.provider_ids, handle.backend, note)
            return note
        return None

    def read_output(
        self,
        handle: ComputeJobHandle,
        path: str,
        on_fallback: Callable[[str], None] | None = None,
        on_unreadable: Callable[[str], None] | None = None,
    ) -> bytes | None:
        """``path`` (relative to the job's output prefix) from the provider, else from blob.

        Returns None when neither copy can be read. A failing fallback is
        logged and returns None; it never replaces the provider's reason.
        When the blob copy serves and the adapter can say why the provider
        could not (the optional ``last_unavailable_reason(handle)``
        capability), ``on_fallback`` receives one readable line about it.
        When neither copy serves, ``on_unreadable`` receives one readable line
        that names both causes (see :func:`unreadable_reason`), so the job's
        history never says "not found" where a node or storage error hid it.
        """
        adapter = self._adapter(handle.backend)
        provider_error: str | None = None
        try:
            data = adapter.read_output(handle, path)
        except HasteError as exc:
            data, provider_error = None, describe_exception(exc)
        if data is not None:
            return data
        reason_of = getattr(adapter, "last_unavailable_reason", None)
        reason = provider_error or (reason_of(handle) if callable(reason_of) else None)
        try:
            data = self._read_blob(handle.output.container, handle.output.child(path))
        except Exception as exc:
            line = unreadable_reason(path, reason, describe_exception(exc))
            log.warning("%s (backend %s)", line, handle.backend)
            if on_unreadable is not None:
                on_unreadable(line)
            return None
        if data is None:
            if on_unreadable is not None:
                on_unreadable(unreadable_reason(path, reason, None))
            return None
        if reason and on_fallback is not None:
            on_fallback(f"{path} read from blob storage because the compute node could not serve it: {reason}")
        return data

    def read_output_tail(self, handle: ComputeJobHandle, path: str, offset: int) -> bytes | None:
        """New bytes of a growing file, if the backend can serve them cheaply; else None."""
        tail = getattr(self._adapter(handle.backend), "read_output_tail", None)
        if not callable(tail):
            return None
        try:
            data = tail(handle, path, offset)
        except HasteError:
            return None
        return data if isinstance(data, bytes) else None

    def list_active(self) -> list[tuple[str, ComputeJobHandle]]:
        """Provider jobs still running on the backends built so far that can list them."""
        return [item for backend in self.listing_backends() for item in self.list_active_on(backend)]

    def listing_backends(self) -> list[str]:
        """The backends built so far that can list their active provider jobs, by name.

        The reconciler asks each one separately (:meth:`list_active_on`), so a
        backend that is down or refuses the listing costs only its own orphans.
        """
        return [
            name for name, adapter in self._registry.built().items() if callable(getattr(adapter, "list_active", None))
        ]

    def list_active_on(self, backend: str) -> list[tuple[str, ComputeJobHandle]]:
        """(our job id, handle) of every provider job still running on ``backend``; raises what the adapter raised."""
        lister = getattr(self._registry.built().get(backend), "list_active", None)
        return list(lister()) if callable(lister) else []

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
