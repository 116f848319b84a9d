"""The job store: one JSON document per job in blob storage, changed only by ETag.

Every change is a read-modify-write with ``If-Match``; when another writer
got there first (HTTP 412) the change function runs again on the fresh
document, so concurrent appends never lose an event. A per-project index
blob, written once when the job is created, lets the API list a project's
jobs newest first without scanning every document.

Listing pages continue from a *position* in the API's sort order (creation time,
then id), carried in a signed continuation token (see :mod:`hastegeo.store.cursor`
for why): the store maps the position to an index blob name and lists from there
(``start_from``), so tokens never hold storage markers or blob names. The signing
key is a random blob in the jobs container (``keys/continuation-tokens``), created
by the first listing and cached per process. Anyone who can read that container can
read every job anyway, so the key guards nothing beyond it. Deleting it (and
restarting the app) invalidates every outstanding token; clients then list again.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import NamedTuple

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.store import cursor
from hastegeo.utils.errors import ConflictError, JobNotFoundError

log = logging.getLogger(__name__)

_JSON = ContentSettings(content_type="application/json")
# Far-future constant so that index names sort newest first.
_EPOCH_MAX_MS = 10**13
_TOKEN_KEY_BLOB = "keys/continuation-tokens"  # noqa: S105 - a blob name, not a secret
# A filtered listing examines at most this many index entries per page, then hands
# back a token, so a rare state never makes one request read the whole project.
SCAN_LIMIT = 1000


class Versioned(NamedTuple):
    """A job and the ETag it was read or written with (pass it back as ``known`` to save a read)."""

    job: Job
    etag: str


@dataclass(frozen=True)
class Update:
    """What :meth:`JobStore.update` did: the job as stored now, its ETag, and whether this call wrote it.

    ``wrote`` is False when the change said "nothing to do" for the current document
    (another writer may have made the move first); callers branch on it instead of
    keeping flags inside the change function, which may run more than once.
    """

    job: Job
    etag: str
    wrote: bool

    @property
    def version(self) -> Versioned:
        return Versioned(self.job, self.etag)


@dataclass(frozen=True)
class Unfinished:
    """What the reconciler needs to know about a job without reading its document."""

    job_id: str
    state: JobState | None
    deadline_at: datetime | None
    updated_at: datetime | None


@dataclass(frozen=True)
class JobPage:
    jobs: list[Job]
    continuation_token: str | None


class JobStore:
    def __init__(
        self, container: ContainerClient, *, max_attempts: int = 20, read_deadline_s: float | None = None
    ) -> None:
        """``read_deadline_s`` bounds the parallel document reads of one listing (TimeoutError past it)."""
        self._container = container
        self._max_attempts = max_attempts
        self._read_deadline_s = read_deadline_s
        self._lister = ThreadPoolExecutor(max_workers=8, thread_name_prefix="job-list")
        self._token_key: bytes | None = None
        self._token_key_lock = threading.Lock()

    @staticmethod
    def document_name(job_id: str) -> str:
        return f"jobs/{job_id}.json"

    @staticmethod
    def index_name(project_id: str, created_at: datetime, job_id: str) -> str:
        inverted = _EPOCH_MAX_MS - int(created_at.timestamp() * 1000)
        return f"index/{project_id}/{inverted:013d}-{job_id}"

    def create(self, job: Job) -> bool:
        """Store a new job and its index entry. Returns False if a job with this id exists.

        The document is written before anything else may point to it.
        """
        try:
            self._container.upload_blob(
                self.document_name(job.id),
                _dump(job),
                overwrite=False,
                content_settings=_JSON,
                metadata=_metadata(job),
            )
        except ResourceExistsError:
            return False
        self._container.upload_blob(self.index_name(job.project_id, job.created_at, job.id), b"", overwrite=True)
        return True

    def get(self, job_id: str) -> Job:
        """Raises JobNotFoundError."""
        return self._read(job_id).job

    def find(self, job_id: str) -> Job | None:
        try:
            return self.get(job_id)
        except JobNotFoundError:
            return None

    def read(self, job_id: str) -> Versioned:
        """The job and its ETag; pass it to :meth:`update` as ``known`` to save a read.

        Raises JobNotFoundError.
        """
        return self._read(job_id)

    def update(self, job_id: str, change: Callable[[Job], Job | None], *, known: Versioned | None = None) -> Update:
        """Apply ``change`` to the stored job with optimistic concurrency.

        ``change`` gets the current job and returns the new one, or None for
        "nothing to do" (then nothing is written, and the result holds the
        current job with ``wrote=False``). It may run several times, so it must
        be pure. Exceptions it raises (e.g. an illegal transition) propagate
        unchanged. ``known`` is a version the caller already read; if it is
        stale the write fails its ETag check and the loop reads afresh.

        Raises:
            JobNotFoundError: no such job.
            ConflictError: the document kept changing for ``max_attempts`` tries.
        """
        for attempt in range(self._max_attempts):
            current, etag = known if (known is not None and attempt == 0) else self._read(job_id)
            updated = change(current)
            if updated is None:
                return Update(current, etag, wrote=False)
            try:
                result = self._container.get_blob_client(self.document_name(job_id)).upload_blob(
                    _dump(updated),
                    overwrite=True,
                    metadata=_metadata(updated),
                    etag=etag,
                    match_condition=MatchConditions.IfNotModified,
                    content_settings=_JSON,
                )
            except ResourceModifiedError:
                continue
            return Update(updated, str(result["etag"]), wrote=True)
        raise ConflictError(f"Job {job_id} changed too often to update; try again")

    def list(
        self,
        project_id: str,
        *,
        states: frozenset[JobState] | None = None,
        page_size: int = 50,
        continuation_token: str | None = None,
    ) -> JobPage:
        """One page of a project's jobs, newest first, optionally filtered by state.

        Without a filter a page is full unless the listing ended. With one, at most
        :data:`SCAN_LIMIT` index entries are examined per page, so a page may be short
        while a continuation token remains. The token is returned only if more
        entries follow.

        Raises:
            cursor.InvalidTokenError: the token was not issued for this project and filter.
            TimeoutError: the documents could not be read within the store's read deadline.
        """
        bound_to = cursor.scope(project_id, states)
        after = cursor.decode(continuation_token, bound_to, self._key) if continuation_token else None
        entries = self._index_after(project_id, after, batch=page_size + 1 if states is None else max(page_size, 100))
        jobs: builtins.list[Job] = []
        last: cursor.Position | None = None
        examined, more = 0, False
        while len(jobs) < page_size and examined < SCAN_LIMIT and not more:
            wanted = page_size - len(jobs) if states is None else max(page_size - len(jobs), 50)
            batch = builtins.list(islice(entries, min(wanted, SCAN_LIMIT - examined)))
            if not batch:
                break
            found = self._lister.map(self.find, [position.job_id for position in batch], timeout=self._read_deadline_s)
            for position, job in zip(batch, found, strict=True):
                if len(jobs) == page_size:
                    more = True  # the rest of this batch comes first on the next page
                    break
                examined, last = examined + 1, position
                if job is not None and (states is None or job.state in states):
                    jobs.append(job)
        else:
            more = more or (last is not None and next(entries, None) is not None)
        token = cursor.encode(last, bound_to, self._key()) if more and last is not None else None
        return JobPage(jobs=jobs, continuation_token=token)

    def _index_after(self, project_id: str, after: cursor.Position | None, *, batch: int) -> Iterator[cursor.Position]:
        """Index entries of a project strictly after ``after``, in listing order (lazily, page by page)."""
        prefix = f"index/{project_id}/"
        start = None if after is None else f"{prefix}{_EPOCH_MAX_MS - after.created_ms:013d}-{after.job_id}"
        for blob in self._container.list_blobs(
            name_starts_with=prefix, start_from=start, results_per_page=min(batch + (start is not None), 5000)
        ):
            inverted, _, job_id = str(blob.name).removeprefix(prefix).partition("-")
            if start is not None and blob.name <= start:
                continue  # start_from is inclusive
            yield cursor.Position(_EPOCH_MAX_MS - int(inverted), job_id)

    def _key(self) -> bytes:
        """The key that signs continuation tokens: one per jobs container, made by whoever lists first."""
        with self._token_key_lock:
            if self._token_key is None:
                # If another instance made it first, theirs is the key.
                with contextlib.suppress(ResourceExistsError):
                    self._container.upload_blob(_TOKEN_KEY_BLOB, secrets.token_bytes(32), overwrite=False)
                self._token_key = self._container.download_blob(_TOKEN_KEY_BLOB).readall()
            return self._token_key

    def unfinished(self) -> builtins.list[Unfinished]:
        """Every job not yet in a terminal state, from blob metadata (one listing, no document reads).

        The reconciler walks this; metadata is written with every document, so
        it is as fresh as the job itself.
        """
        found = []
        for blob in self._container.list_blobs(name_starts_with="jobs/", include=["metadata"]):
            meta = blob.metadata or {}
            state = meta.get("state", "")
            if state and JobState(state).terminal:
                continue
            job_id = blob.name.removeprefix("jobs/").removesuffix(".json")
            deadline = meta.get("deadline")
            updated = meta.get("updated")
            found.append(
                Unfinished(
                    job_id=job_id,
                    state=JobState(state) if state else None,
                    deadline_at=datetime.fromisoformat(deadline) if deadline else None,
                    updated_at=datetime.fromisoformat(updated) if updated else None,
                )
            )
        return found

    def save_rejection(self, key: str, document: dict[str, object]) -> str:
        """Keep a rejected upstream request for operators (``rejected/<key>.json``). Returns the blob name."""
        name = f"rejected/{key}.json"
        self._container.upload_blob(name, json.dumps(document).encode(), overwrite=True, content_settings=_JSON)
        return name

    def _read(self, job_id: str) -> Versioned:
        try:
            downloader = self._container.download_blob(self.document_name(job_id))
        except ResourceNotFoundError:
            raise JobNotFoundError(job_id) from None
        data = downloader.readall()
        etag = downloader.properties.etag
        return Versioned(Job.model_validate(json.loads(data)), etag)


def _metadata(job: Job) -> dict[str, str]:
    return {"state": job.state.value, "deadline": job.deadline_at.isoformat(), "updated": job.updated_at.isoformat()}


def _dump(job: Job) -> bytes:
    return job.model_dump_json(by_alias=True).encode()
