"""Files between blob storage and a working directory, as Batch resource and output files move them.

The local backend stages inputs and uploads outputs this way, and so does the
Batch test service, which plays the Batch nodes. Both stream: a blob never
sits whole in memory. Errors are the SDK's own; the caller decides what they
mean (retries are the client's retry policy, see :func:`hastegeo.runtime.transfer_client`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hastegeo.utils.side_by_side import each

if TYPE_CHECKING:
    from azure.storage.blob import BlobClient, ContainerClient

UPLOADS_AT_ONCE = 4


def download(blob: BlobClient, target: Path) -> None:
    """Write the blob to ``target``, creating its folder."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as handle:
        blob.download_blob().readinto(handle)


def download_prefix(container: ContainerClient, prefix: str | None, folder: Path, *, strip: str = "") -> int:
    """Every blob named ``prefix…`` (None: every blob) into ``folder``, named without its leading ``strip``.

    Returns how many there were.
    """
    count = 0
    for blob in container.list_blobs(name_starts_with=prefix):
        download(container.get_blob_client(blob.name), folder / blob.name[len(strip) :])
        count += 1
    return count


def upload(container: ContainerClient, files: Iterable[tuple[Path, str]]) -> None:
    """Upload each ``(file, blob name)``, replacing a blob of that name, up to :data:`UPLOADS_AT_ONCE` at a time.

    A job's outputs are mostly a few small files, each one round trip: overlapping them takes their
    sum off the time from a workload's exit to its job's end, as a Batch node uploads its output
    files side by side. Every upload is waited for; the first failure is raised (the caller uploads
    all of them again). The SDK's clients are safe to share between threads.
    """

    def upload_one(item: tuple[Path, str]) -> None:
        path, name = item
        with path.open("rb") as data:
            container.upload_blob(name, data, overwrite=True)

    each(upload_one, list(files), at_once=UPLOADS_AT_ONCE, name="upload")


def read_range(blob: BlobClient, offset: int, limit: int) -> bytes | None:
    """At most ``limit`` bytes of ``blob`` from ``offset`` in one call: b"" from its end on; None when it is missing.

    A follower asks from the end most of the time, which storage answers 416 (range not satisfiable):
    that is the empty answer, not an error. Other storage errors propagate.
    """
    from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

    try:
        return bytes(blob.download_blob(offset=offset, length=limit).readall())
    except ResourceNotFoundError:
        return None
    except HttpResponseError as exc:
        if exc.status_code == 416:
            return b""
        raise
