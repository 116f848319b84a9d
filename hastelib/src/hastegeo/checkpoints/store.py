"""Checkpoint sets to and from blob storage: a set is uploaded whole, then the pointer commits it.

The pointer is written with an ETag condition on the one this writer last saw, so two writers of
one job (an attempt that outlived its node, say) never both believe they committed; the loser
reads the pointer again and commits its set under the next number. The set before the newest
stays, so a reader that followed the old pointer a moment ago still finds its files; older sets
are deleted after the commit, best-effort (a crash leaves garbage, never a gap).

Errors are the SDK's own; the agent decides what a failed copy means (the next copy tries again).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from hastegeo.checkpoints.layout import (
    POINTER,
    SETS,
    CheckpointFormatError,
    FileEntry,
    Pointer,
    files_in,
    set_name,
)
from hastegeo.utils.files import sha256_file

if TYPE_CHECKING:
    from azure.storage.blob import ContainerClient

KEEP_SETS = 2  # the committed one and the one before it


class CheckpointConflict(Exception):
    """Another writer committed a set since this one read the pointer."""


class RestoreError(Exception):
    """The set the pointer names is not there as listed: nothing was put back."""


@dataclass
class Committed:
    pointer: Pointer
    etag: str


class CheckpointStore:
    """One job's checkpoints under ``prefix`` in ``container``."""

    def __init__(self, container: ContainerClient, prefix: str) -> None:
        self._container = container
        self._prefix = prefix.strip("/")

    def _name(self, *parts: str) -> str:
        return "/".join((self._prefix, *parts))

    def latest(self) -> Committed | None:
        """The committed pointer and its ETag; None when there is none (or it is not this format)."""
        from azure.core.exceptions import ResourceNotFoundError

        try:
            download = self._container.get_blob_client(self._name(POINTER)).download_blob()
            data = download.readall()
        except ResourceNotFoundError:
            return None
        try:
            return Committed(Pointer.from_json(data), str(download.properties.etag))
        except CheckpointFormatError:
            return None

    def publish(self, folder: Path, *, attempt: int, job_id: str, seen: Committed | None) -> Committed:
        """Upload every complete file of ``folder`` as a new set, then commit the pointer to it.

        ``seen`` is the pointer this writer last read or wrote (None: it saw none).

        Raises:
            CheckpointConflict: another writer committed since ``seen``; nothing this call wrote is pointed to.
        """
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

        sequence = (seen.pointer.sequence if seen else 0) + 1
        entries = []
        set_prefix = self._name(SETS, set_name(sequence, attempt))
        for path in files_in(folder):
            relative = path.relative_to(folder).as_posix()
            with path.open("rb") as handle:  # the open file survives the workload replacing it meanwhile
                digest, size = _upload(self._container, f"{set_prefix}/{relative}", handle)
            entries.append(FileEntry(relative, size, digest))
        pointer = Pointer(sequence, attempt, job_id, tuple(entries), datetime.now(UTC).isoformat())
        blob = self._container.get_blob_client(self._name(POINTER))
        try:
            if seen is None:
                result = blob.upload_blob(pointer.to_json(), overwrite=False)
            else:
                result = blob.upload_blob(
                    pointer.to_json(), overwrite=True, etag=seen.etag, match_condition=MatchConditions.IfNotModified
                )
        except (ResourceExistsError, ResourceModifiedError) as exc:
            raise CheckpointConflict("another writer committed a checkpoint first") from exc
        committed = Committed(pointer, str(result["etag"]))
        self._prune(sequence)
        return committed

    def restore(self, pointer: Pointer, folder: Path) -> None:
        """Put the set ``pointer`` names in ``folder``, replacing what is there, or raise RestoreError and leave
        ``folder`` as it was. Files are fetched beside it first and checked against the pointer."""
        from azure.core.exceptions import AzureError

        staging = folder.with_name(folder.name + ".restoring")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            for entry in pointer.files:
                target = staging / entry.name
                target.parent.mkdir(parents=True, exist_ok=True)
                blob = self._container.get_blob_client(self._name(SETS, pointer.set_name, entry.name))
                with target.open("wb") as handle:
                    blob.download_blob().readinto(handle)
                if target.stat().st_size != entry.size or sha256_file(target) != entry.sha256:
                    raise RestoreError(f"{entry.name} in set {pointer.set_name} does not match its pointer")
            staging.mkdir(parents=True, exist_ok=True)
        except AzureError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise RestoreError(f"set {pointer.set_name} could not be read: {type(exc).__name__}") from exc
        except RestoreError:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        shutil.rmtree(folder, ignore_errors=True)
        staging.replace(folder)

    def _prune(self, newest: int) -> None:
        """Delete sets older than the :data:`KEEP_SETS` newest; a failure leaves them for the next commit."""
        from azure.core.exceptions import AzureError

        try:
            for blob in self._container.list_blobs(name_starts_with=self._name(SETS) + "/"):
                number = blob.name[len(self._name(SETS)) + 1 :].split("-", 1)[0]
                if number.isdigit() and int(number) <= newest - KEEP_SETS:
                    self._container.delete_blob(blob.name)
        except AzureError:
            pass


class _Hashing:
    """A readable stream that hashes and counts what the upload reads."""

    def __init__(self, handle: object) -> None:
        import hashlib

        self._handle = handle
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._handle.read(size)  # type: ignore[attr-defined]
        self.digest.update(data)
        self.size += len(data)
        return data


def _upload(container: ContainerClient, name: str, handle: object) -> tuple[str, int]:
    """Upload ``handle``'s bytes to ``name``; their sha256 and size, as read (one pass over the file)."""
    stream = _Hashing(handle)
    container.upload_blob(name, stream, overwrite=True)  # type: ignore[arg-type]
    return stream.digest.hexdigest(), stream.size
