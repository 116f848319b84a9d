"""The job store: one JSON document per job in blob storage, changed only by ETag.

Every change is a read-modify-write with ``If-Match``; when another writer
got there first (HTTP 412) the change function runs again on the fresh
document, so concurrent appends never lose an event. A per-project index
blob, written once when the job is created, lets the API list a project's
jobs newest first without scanning every document; an
``active/`` entry per unfinished job and an ``ended/<state>/`` entry per finished
one let the reconciler and state-filtered listings find jobs without walking history
(:mod:`hastegeo.store.index`, ADR 0011). Entries are written before the document
they point to and removed after it moved on, so a crash between the two leaves an
entry too many, never one too few; readers check every entry against its document
and delete the ones that can never match again.

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
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any, NamedTuple

from azure.core import MatchConditions
from azure.core.exceptions import AzureError, ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient, ContentSettings

from hastegeo.models import changes
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.store import cursor, due, index
from hastegeo.utils.errors import ConflictError, JobNotFoundError

log = logging.getLogger(__name__)

_JSON = ContentSettings(content_type="application/json")
_TOKEN_KEY_BLOB = "keys/continuation-tokens"  # noqa: S105 - a blob name, not a secret
# Present once every job of the container has its active/ended entries (ADR 0011).
_INDEXED_BLOB = "keys/state-index-v1"
# A filtered listing examines at most this many index entries per page, then hands
# back a token, so a rare state never makes one request read the whole project.
SCAN_LIMIT = 1000
# An index entry without its document may belong to a create still in flight; past this
# age it belongs to a create that crashed, and readers delete it.
ORPHAN_ENTRY_GRACE_S = 600.0
# Page sizes of the due listing: a pass with nothing due lists the first few entries only (ADR 0041).
_DUE_PAGES = (32, 256, 1024, *([5000] * 10_000))


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
    ``previous`` is the state the write moved the job from (the job's state when nothing was written).
    """

    job: Job
    etag: str
    wrote: bool
    previous: JobState

    @property
    def ended(self) -> bool:
        """This write moved the job to a terminal state."""
        return self.wrote and self.job.state.terminal and not self.previous.terminal

    @property
    def version(self) -> Versioned:
        return Versioned(self.job, self.etag)


class _Unreadable:
    """A stored document that does not parse (see :meth:`JobStore._find_readable`)."""


_UNREADABLE = _Unreadable()


@dataclass(frozen=True)
class JobPage:
    jobs: list[Job]
    continuation_token: str | None


class JobStore:
    def __init__(
        self,
        container: ContainerClient,
        *,
        max_attempts: int = 20,
        read_deadline_s: float | None = None,
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

    def create(self, job: Job) -> Versioned | None:
        """Store a new job and its index entries: the job as stored (its first state change numbered, for
        its event), or None when a job with this id exists.

        The entries go first (in parallel): a crash before the document leaves entries that
        readers skip and delete, never a job that neither the listing nor the reconciler
        finds. The document is written before any message may point to it. A job stored waiting
        for others gets its due entry with them (store/due.py: at its deadline).
        """
        job = _with_due(job, changes.stamp(None, job))
        names = [*index.entry_names(job), *([job.due_entry] if job.due_entry else [])]
        list(self._lister.map(self._put_entry, names))
        try:
            result = self._container.get_blob_client(self.document_name(job.id)).upload_blob(
                _dump(job),
                overwrite=False,
                content_settings=_JSON,
                metadata=_metadata(job),
            )
        except ResourceExistsError:
            return None  # entries at another position than the stored job's are deleted by readers
        return Versioned(job, str(result["etag"]))

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

        A move to a terminal state writes the job's ``ended/<state>`` entry before the
        document; its ``active/`` entry stays until :meth:`retire` (once the job's events
        are out: the pipeline's journal), so the reconciler's sweep still finds the job.
        """
        ended: set[JobState] = set()  # ended entries this call wrote
        dues: set[str] = set()  # due entries this call wrote (store/due.py)
        for attempt in range(self._max_attempts):
            current, etag = known if (known is not None and attempt == 0) else self._read(job_id)
            try:
                updated = change(current)
            except Exception:
                # A refusal (a cancel of a job another writer ended meanwhile): the entries an earlier try of
                # this call wrote for another ending go too, as when the change says "nothing to do".
                self._drop_ended(current, ended)
                raise
            if updated is None:
                self._drop_ended(current, ended)
                return Update(current, etag, wrote=False, previous=current.state)
            updated = changes.stamp(current, updated)
            updated = _with_due(current, updated)
            ending = updated.state.terminal and not current.state.terminal
            if ending and updated.state not in ended:
                self._put_entry(self._state_entry(updated))
                ended.add(updated.state)
            entry = updated.due_entry
            if entry is not None and entry != current.due_entry and entry not in dues:  # before the document
                self._put_entry(entry)
                dues.add(entry)
            try:
                result = self._replace(updated, etag)
            except ResourceModifiedError:
                continue
            self._drop_ended(updated, ended)
            if current.due_entry not in (None, updated.due_entry):  # moved: the old entry goes after the document
                self._delete_entry(current.due_entry)
            return Update(updated, str(result["etag"]), wrote=True, previous=current.state)
        raise ConflictError(f"Job {job_id} changed too often to update; try again")

    def _replace(self, job: Job, etag: str) -> dict[str, Any]:
        """Write the document of ``job`` over the version ``etag``. Raises ResourceModifiedError: it changed."""
        return self._container.get_blob_client(self.document_name(job.id)).upload_blob(
            _dump(job),
            overwrite=True,
            metadata=_metadata(job),
            etag=etag,
            match_condition=MatchConditions.IfNotModified,
            content_settings=_JSON,
        )

    def list(
        self,
        project_id: str,
        *,
        states: frozenset[JobState] | None = None,
        page_size: int = 50,
        continuation_token: str | None = None,
    ) -> JobPage:
        """One page of a project's jobs, newest first, optionally filtered by state.

        A filter reads only the index entries of the states it names (ADR 0011), so a page
        is full whenever that many jobs match, however many others the project has. Each
        entry is checked against its document; stale ones (a crash between the two writes)
        are skipped and deleted. At most :data:`SCAN_LIMIT` entries are examined per page,
        so a page may be short while a continuation token remains. The token is returned
        only if more entries follow.

        Raises:
            cursor.InvalidTokenError: the token was not issued for this project and filter.
            TimeoutError: the documents could not be read within the store's read deadline.
        """
        bound_to = cursor.scope(project_id, states)
        after = cursor.decode(continuation_token, bound_to, self._key) if continuation_token else None
        prefixes = index.prefixes(project_id, states)
        entries = index.merge(self._entries_after(prefix, after, batch=page_size + 1) for prefix in prefixes)
        jobs: builtins.list[Job] = []
        last: cursor.Position | None = None
        examined, more = 0, False
        now = datetime.now(UTC)
        while len(jobs) < page_size and examined < SCAN_LIMIT:
            batch = builtins.list(islice(entries, min(page_size - len(jobs), SCAN_LIMIT - examined)))
            if not batch:
                break
            found = self._lister.map(
                self.find, [entry.position.job_id for entry in batch], timeout=self._read_deadline_s
            )
            for entry, job in zip(batch, found, strict=True):
                examined, last = examined + 1, entry.position
                if index.matches(entry, job, project_id, states):
                    assert job is not None
                    jobs.append(job)
                elif index.stale(entry, job, now, ORPHAN_ENTRY_GRACE_S):
                    self._delete_entry(entry.name, etag=entry.etag)
        else:
            more = last is not None and next(entries, None) is not None
        token = cursor.encode(last, bound_to, self._key()) if more and last is not None else None
        return JobPage(jobs=jobs, continuation_token=token)

    def _entries_after(self, prefix: str, after: cursor.Position | None, *, batch: int) -> Iterator[index.Entry]:
        """Index entries under ``prefix`` strictly after ``after``, in listing order (lazily, page by page)."""
        start = None if after is None else prefix + index.sort_key(after)
        for blob in self._container.list_blobs(
            name_starts_with=prefix, start_from=start, results_per_page=min(batch + (start is not None), 5000)
        ):
            if start is not None and blob.name <= start:
                continue  # start_from is inclusive
            yield index.Entry(str(blob.name), index.parse(str(blob.name), prefix), str(blob.etag), blob.last_modified)

    def _state_entry(self, job: Job) -> str:
        return index.state_entry(job.project_id, job.state, index.sort_key(index.position_of(job)))

    def _put_entry(self, name: str) -> None:
        self._container.upload_blob(name, b"", overwrite=True)

    def _delete_entry(self, name: str, *, etag: str | None = None) -> None:
        """Delete an index entry; with ``etag``, only the version that was judged stale.

        A failure is left for the next reader: an entry too many costs a document read, never a wrong answer.
        """
        condition = {"etag": etag, "match_condition": MatchConditions.IfNotModified} if etag else {}
        try:
            self._container.delete_blob(name, **condition)  # type: ignore[arg-type]
        except (ResourceNotFoundError, ResourceModifiedError):
            pass
        except AzureError as exc:
            log.info("index entry %s not deleted (%s); the next reader retries", name, type(exc).__name__)

    def _drop_ended(self, final: Job, written: set[JobState]) -> None:
        """Delete ``ended`` entries this update wrote for a state the job did not end in.

        Only once the job has ended: a terminal document never changes again, so no
        other writer can still need them. Otherwise readers remove them later.
        """
        if final.state.terminal:
            key = index.sort_key(index.position_of(final))
            for state in written - {final.state}:
                self._delete_entry(index.state_entry(final.project_id, state, key))

    def _key(self) -> bytes:
        """The key that signs continuation tokens: one per jobs container, made by whoever lists first."""
        with self._token_key_lock:
            if self._token_key is None:
                # If another instance made it first, theirs is the key.
                with contextlib.suppress(ResourceExistsError):
                    self._container.upload_blob(_TOKEN_KEY_BLOB, secrets.token_bytes(32), overwrite=False)
                self._token_key = self._container.download_blob(_TOKEN_KEY_BLOB).readall()
            return self._token_key

    def active(self, now: datetime | None = None) -> builtins.list[Job]:
        """The jobs behind the ``active/`` entries: every unfinished job, and ended jobs not yet retired.

        Costs one listing of the active entries and one read per job listed, however many
        jobs have ended. An ended job keeps its entry until :meth:`retire` (its events are
        out first: the pipeline's journal decides). Repairs what a crash left behind
        (ADR 0011): an entry at another position than its document, or without a document
        for longer than :data:`ORPHAN_ENTRY_GRACE_S`, is deleted.
        """
        return self.behind(
            builtins.list(self.active_entries(self._container.list_blobs(name_starts_with=index.ACTIVE))), now
        )

    @staticmethod
    def active_entries(blobs: Iterable[Any]) -> Iterator[index.Entry]:
        """``active/`` entries as listed (blob properties from a listing of that prefix)."""
        for blob in blobs:
            name = str(blob.name)
            project = index.project_of_active(name)
            yield index.Entry(name, index.parse(name, f"{index.ACTIVE}{project}/"), str(blob.etag), blob.last_modified)

    def behind(self, entries: builtins.list[index.Entry], now: datetime | None = None) -> builtins.list[Job]:
        """The jobs behind some listed ``active/`` entries (see :meth:`active`), repairing the stale ones."""
        now = now or datetime.now(UTC)
        found = []
        read = self._lister.map(self._find_readable, [e.position.job_id for e in entries])
        for entry, job in zip(entries, read, strict=True):
            if isinstance(job, _Unreadable):
                continue  # logged; its entries stay until the document can be read
            if job is not None and index.matches(entry, job, index.project_of_active(entry.name), None):
                found.append(job)
            elif index.stale(entry, job, now, ORPHAN_ENTRY_GRACE_S):
                log.info("index: removing stale entry %s", entry.name)
                self._delete_entry(entry.name, etag=entry.etag)
        return found

    def due(self, now: datetime, *, stale_before: datetime | None = None) -> builtins.list[Job]:
        """The jobs whose due entry's bucket has begun by ``now`` (store/due.py), as their documents say.

        Lists ``due/`` from its oldest bucket and stops at the first entry not due yet, in pages that grow
        (the first one small: with nothing due, the pass lists a few entries, not the index). An entry whose
        document names another (the job moved on or ended and was retired), or without a document since
        before ``stale_before`` (storage's clock; default 10 minutes ago), is deleted.
        """
        until = due.due_until(now)
        listed: builtins.list[tuple[str, str, datetime | None]] = []
        start: str | None = None
        for size in _DUE_PAGES:
            blobs = self._container.list_blobs(
                name_starts_with=due.DUE, start_from=start, results_per_page=size + (start is not None)
            )
            page = builtins.list(islice((b for b in blobs if start is None or str(b.name) > start), size))
            fresh = [(str(b.name), str(b.etag), b.last_modified) for b in page if str(b.name) < until]
            listed += fresh
            if len(fresh) < len(page) or len(page) < size:
                break
            start = listed[-1][0]
        stale_before = stale_before or datetime.now(UTC) - timedelta(seconds=ORPHAN_ENTRY_GRACE_S)
        found = []
        for (name, etag, modified), job in zip(
            listed, self._lister.map(self._find_readable, [due.job_of(n) for n, _, _ in listed]), strict=True
        ):
            if isinstance(job, _Unreadable):
                continue
            if job is not None and job.due_entry == name:
                found.append(job)
            elif job is not None or (modified is not None and modified < stale_before):
                self._delete_entry(name, etag=etag)
        return found

    def index_due(self, job: Job) -> None:
        """Give an unfinished, settled job found without its due entry its entry (the census's repair)."""
        name = due.entry_name(job)
        if name is None:
            return
        if job.due_entry == name:  # the document names it: the entry alone was lost
            self._put_entry(name)
            return
        self.update(job.id, lambda current: None if current.state.terminal else current)

    def census_page(self, prefix: str, token: str | None, size: int) -> tuple[builtins.list[Any], str | None]:
        """One page of blobs under ``prefix`` from ``token``, and the token of the next (None: the end)."""
        pages = self._container.list_blobs(name_starts_with=prefix, results_per_page=size).by_page(
            continuation_token=token
        )
        page = builtins.list(next(pages, []))
        return page, pages.continuation_token  # type: ignore[attr-defined]

    def retire(self, job: Job, *, repair: bool = False, active: bool = True) -> None:
        """Delete the ``active/`` entry of a job that has ended, and the due entry its ending write kept (so
        the sweep finds a job not retired); with ``repair``, make sure of its ``ended/`` entry first (the
        ending write made it, unless a crash came before the document). ``active=False``: the due entry
        only (the ``active/`` one goes with the job's cost totals marker: ADR 0051).
        """
        if not job.state.terminal:
            raise ValueError(f"job {job.id} is {job.state.value}: only an ended job leaves the active index")
        if repair:
            self._put_entry(self._state_entry(job))
        if active:
            self._delete_entry(self.active_name(job))
        if job.due_entry is not None:
            self._delete_entry(job.due_entry)

    @staticmethod
    def active_name(job: Job) -> str:
        """The name of the job's ``active/`` entry."""
        return index.active_entry(job.project_id, index.sort_key(index.position_of(job)))

    def rearm(self, job_id: str) -> bool:
        """Make an ended job due again, so the next sweep reads it and repeats its followers step (a release
        lost after its end: ADR 0047); False when it has not ended (its end does that) or has no followers.

        Its entry is the one its ending write named (the bucket of its end: due already), put back with one
        call; a job that got its first dependent after its end gets that entry named in its document first.

        Raises JobNotFoundError, ConflictError (the document kept changing).
        """
        for _ in range(self._max_attempts):
            current, etag = self._read(job_id)
            name = current.due_entry or due.ended_entry(current)
            if not current.state.terminal or name is None:
                return False
            self._put_entry(name)  # before the document, as every entry
            if current.due_entry == name:
                return True
            try:
                self._replace(current.model_copy(update={"due_entry": name}), etag)
            except ResourceModifiedError:
                continue
            return True
        raise ConflictError(f"Job {job_id} changed too often to update; try again")

    def backfill_index(self) -> int | None:
        """Give jobs stored before the state index (ADR 0011) their entries, once per container.

        Returns the number of jobs indexed, or None when the container was indexed already
        (one storage call). The walk over every document happens once, on the first call
        after an upgrade; writing an entry twice is harmless, so two callers at once only
        duplicate work.
        """
        marker = self._container.get_blob_client(_INDEXED_BLOB)
        if marker.exists():
            return None
        ids = (
            str(blob.name).removeprefix("jobs/").removesuffix(".json")
            for blob in self._container.list_blobs(name_starts_with="jobs/")
        )
        indexed = 0
        while chunk := builtins.list(islice(ids, 500)):  # bounded memory, however many jobs
            jobs = [job for job in self._lister.map(self._find_readable, chunk) if isinstance(job, Job)]
            builtins.list(self._lister.map(self._put_entry, [name for job in jobs for name in index.entry_names(job)]))
            indexed += len(jobs)
        marker.upload_blob(b"", overwrite=True)
        return indexed

    def _find_readable(self, job_id: str) -> Job | _Unreadable | None:
        """:meth:`find`, but a document that does not parse is logged and answered with :data:`_UNREADABLE`.

        Sweeps use it: one bad record must neither stop them nor pass for a missing one
        (whose entries would be deleted).
        """
        try:
            return self.find(job_id)
        except ValueError as exc:
            log.warning("job %s: the stored document cannot be read (%s)", job_id, type(exc).__name__)
            return _UNREADABLE

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


def _with_due(current: Job, updated: Job) -> Job:
    """``updated`` naming the due entry it should have: an ending write keeps the current one for retire,
    or moves it to its end when its end has followers (:func:`due.ended_entry`); a note on an ended job
    keeps it."""
    if not updated.state.terminal:
        name = due.entry_name(updated)
    elif current.state.terminal:
        name = current.due_entry
    else:
        name = due.ended_entry(updated) or current.due_entry
    return updated if updated.due_entry == name else updated.model_copy(update={"due_entry": name})


def _metadata(job: Job) -> dict[str, str]:
    return {"state": job.state.value, "deadline": job.deadline_at.isoformat(), "updated": job.updated_at.isoformat()}


def _dump(job: Job) -> bytes:
    return job.model_dump_json(by_alias=True).encode()
