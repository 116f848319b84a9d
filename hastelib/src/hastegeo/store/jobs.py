"""The job store: one JSON document per job in blob storage, changed only by ETag.

Every change is a read-modify-write with ``If-Match``; when another writer
got there first (HTTP 412) the change function runs again on the fresh
document, so concurrent appends never lose an event. A per-project index
blob, written once when the job is created, lets the API list a project's
jobs newest first without scanning every document.
"""

from __future__ import annotations

import builtins
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.utils.errors import ConflictError, JobNotFoundError

log = logging.getLogger(__name__)

_JSON = ContentSettings(content_type="application/json")
# Far-future constant so that index names sort newest first.
_EPOCH_MAX_MS = 10**13


Versioned = tuple[Job, str]  # a job and the ETag it was read or written with


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
    def __init__(self, container: ContainerClient, *, max_attempts: int = 20) -> None:
        self._container = container
        self._max_attempts = max_attempts
        self._lister = ThreadPoolExecutor(max_workers=8, thread_name_prefix="job-list")

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
        return self._read(job_id)[0]

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

    def update(self, job_id: str, change: Callable[[Job], Job | None], *, known: Versioned | None = None) -> Job:
        """Apply ``change`` to the stored job with optimistic concurrency.

        ``change`` gets the current job and returns the new one, or None for
        "nothing to do" (then nothing is written and the current job is
        returned). It may run several times, so it must be pure. Exceptions it
        raises (e.g. an illegal transition) propagate unchanged. ``known`` is a
        version the caller already read; if it is stale the write fails its
        ETag check and the loop reads afresh.

        Raises:
            JobNotFoundError: no such job.
            ConflictError: the document kept changing for ``max_attempts`` tries.
        """
        return self.update_versioned(job_id, change, known=known)[0]

    def update_versioned(
        self, job_id: str, change: Callable[[Job], Job | None], *, known: Versioned | None = None
    ) -> Versioned:
        """:meth:`update`, returning the job with its new ETag."""
        for attempt in range(self._max_attempts):
            current, etag = known if (known is not None and attempt == 0) else self._read(job_id)
            updated = change(current)
            if updated is None:
                return current, etag
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
            return updated, str(result["etag"])
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

        A state filter is applied to each page of the index, so a page can hold
        fewer than ``page_size`` jobs while a continuation token remains.
        """
        pages = self._container.list_blobs(name_starts_with=f"index/{project_id}/", results_per_page=page_size).by_page(
            continuation_token=continuation_token
        )
        names = [blob.name for blob in next(pages, [])]
        token = pages.continuation_token  # type: ignore[attr-defined]
        ids = [name.rsplit("-", 1)[-1] for name in (n.rsplit("/", 1)[-1] for n in names)]
        found = list(self._lister.map(self.find, ids))
        jobs = [job for job in found if job is not None and (states is None or job.state in states)]
        return JobPage(jobs=jobs, continuation_token=token or None)

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

    def _read(self, job_id: str) -> tuple[Job, str]:
        try:
            downloader = self._container.download_blob(self.document_name(job_id))
        except ResourceNotFoundError:
            raise JobNotFoundError(job_id) from None
        data = downloader.readall()
        etag = downloader.properties.etag
        return Job.model_validate(json.loads(data)), etag


def _metadata(job: Job) -> dict[str, str]:
    return {"state": job.state.value, "deadline": job.deadline_at.isoformat(), "updated": job.updated_at.isoformat()}


def _dump(job: Job) -> bytes:
    return job.model_dump_json(by_alias=True).encode()
