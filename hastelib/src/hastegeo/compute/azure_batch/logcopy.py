"""Keep what a reader got of a task's stdout or stderr from the node in its blob copy (docs/adr/0045).

Batch uploads a task's streams to blob once, when the task completes (its ``OutputFile``s);
until then they live only on the node, and a node that is preempted or lost takes them
along. So every part a reader got from the node is appended to an append blob at the
stream's blob name, where the final upload later replaces it with the whole file. The copy
grows only while someone reads the logs: a job nobody follows costs no storage call more.

Appends are contiguous and conditional (``appendpos``), so two readers never write a byte
twice, and a copy that is already the final upload (a block blob) is left alone. All of it
is best-effort: a copy that could not be written costs nothing but that copy.
"""

from __future__ import annotations

import logging
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

from hastegeo.utils.errors import describe_exception

log = logging.getLogger(__name__)
APPEND_BLOB = "AppendBlob"


def keep(blobs: Any, container: str, name: str, offset: int, data: bytes) -> None:
    """Append to blob ``name`` the bytes of ``data`` (the stream from ``offset``) that it does not hold yet."""
    if not data:
        return
    blob = blobs.get_blob_client(container, name)
    try:
        size = _append_blob_size(blob)
        if size is None or not offset <= size < offset + len(data):
            return  # the final copy is there, or the copy ends before this part begins (a gap is never written)
        blob.append_block(data[size - offset :], appendpos_condition=size)
    except Exception as exc:  # best-effort: the reader has its part whatever happens to the copy
        log.info("the blob copy of %s was not extended: %s", name, describe_exception(exc))


def _append_blob_size(blob: Any) -> int | None:
    """The append blob's size (created empty when missing); None when the blob is not an append blob."""
    try:
        properties = blob.get_blob_properties()
    except ResourceNotFoundError:
        try:
            blob.create_append_blob(match_condition=MatchConditions.IfMissing)
        except (
            ResourceExistsError,
            ResourceModifiedError,
        ):  # another reader, or the final upload, came first: look again next time
            return None
        return 0
    kind = getattr(properties.blob_type, "value", properties.blob_type)
    return int(properties.size) if str(kind) == APPEND_BLOB else None
