"""The admission book: one document in the jobs container, changed only by ETag (ADR 0032).

Every change reads the book with its ETag, applies a pure function
(:mod:`~hastegeo.pipeline.admission.fairshare`) and writes it back ``If-Match``; when
another writer got there first (HTTP 412), or created it first, the change runs
again on the fresh book, as :meth:`hastegeo.store.jobs.JobStore.update` does for
a job. The book holds job ids, so running a change twice is harmless.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.pipeline.admission.fairshare import Book, Seat
from hastegeo.utils.backoff import tries
from hastegeo.utils.errors import ConflictError

BOOK_BLOB = "admission/book.json"
MAX_ATTEMPTS = 50  # every submission and every end of a job with limits writes the book
_JSON = ContentSettings(content_type="application/json")
T = TypeVar("T")


def dump(book: Book) -> bytes:
    def seat(s: Seat) -> dict[str, str]:
        return {"jobId": s.job_id, "project": s.project, "backend": s.backend, "since": s.since.isoformat()}

    body = {"holding": [seat(s) for s in book.holding.values()], "waiting": [seat(s) for s in book.waiting]}
    return json.dumps(body, separators=(",", ":")).encode()


def load(data: bytes) -> Book:
    body: dict[str, list[dict[str, Any]]] = json.loads(data)

    def seat(item: dict[str, Any]) -> Seat:
        return Seat(item["jobId"], item["project"], item["backend"], datetime.fromisoformat(item["since"]))

    holding = [seat(item) for item in body.get("holding", [])]
    return Book(holding={s.job_id: s for s in holding}, waiting=[seat(item) for item in body.get("waiting", [])])


class AdmissionBook:
    def __init__(self, container: ContainerClient, max_attempts: int = MAX_ATTEMPTS) -> None:
        self._blob = container.get_blob_client(BOOK_BLOB)
        self._max_attempts = max_attempts

    def read(self) -> Book:
        return self._read()[0]

    def change(self, change: Callable[[Book], T]) -> T:
        """Apply ``change`` (pure; it may run several times) to the stored book and return what it returned.

        Raises:
            ConflictError: the book kept changing for ``max_attempts`` tries (the caller's step is retried).
        """
        for _ in tries(self._max_attempts):  # a lost ETag check waits a random, growing time first
            book, etag = self._read()
            before = dump(book)
            result = change(book)
            after = dump(book)
            if after == before:
                return result
            condition = (
                {"etag": etag, "match_condition": MatchConditions.IfNotModified}
                if etag
                else {"match_condition": MatchConditions.IfMissing}
            )
            try:
                self._blob.upload_blob(after, overwrite=True, content_settings=_JSON, **condition)
            except (ResourceModifiedError, ResourceExistsError):
                continue
            return result
        raise ConflictError("The admission book changed too often to update; try again")

    def _read(self) -> tuple[Book, str | None]:
        try:
            download = self._blob.download_blob()
        except ResourceNotFoundError:
            return Book(), None
        return load(download.readall()), str(download.properties.etag)
