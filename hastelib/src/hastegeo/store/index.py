"""Where a job can be found without reading history: the names of the job store's index entries.

Pure: names, parsing and the merge of listings; no I/O. The store writes the entries
(see :mod:`hastegeo.store.jobs` and ADR 0011 for the write order and the repairs).

Every entry is an empty blob whose name ends in the listing's sort key
``<inverted created ms>-<job id>``, so a prefix listing comes back newest first:

- ``index/<project>/<key>`` — every job of a project (the unfiltered listing);
- ``active/<project>/<key>`` — jobs not yet in a terminal state (the reconciler's sweep,
  and listings filtered by a non-terminal state);
- ``ended/<project>/<state>/<key>`` — jobs that ended in ``state`` (listings filtered by
  a terminal state).

An entry is a hint, never the truth: a listing keeps it only when the job document
exists at the same position (project and creation time) and, for a filtered listing,
is in a wanted state. Stale entries (a crash between an entry and its document) are
skipped and removed by whoever finds them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.store.cursor import Position

# Far-future constant so that index names sort newest first.
EPOCH_MAX_MS = 10**13
ALL, ACTIVE, ENDED = "index/", "active/", "ended/"


@dataclass(frozen=True)
class Entry:
    """One index entry as listed: where it points and the version it was listed with."""

    name: str
    position: Position
    etag: str
    last_modified: datetime | None


def created_ms(created_at: datetime) -> int:
    return int(created_at.timestamp() * 1000)


def sort_key(position: Position) -> str:
    """The name suffix that sorts like the listing (newest first, then id)."""
    return f"{EPOCH_MAX_MS - position.created_ms:013d}-{position.job_id}"


def position_of(job: Job) -> Position:
    return Position(created_ms(job.created_at), job.id)


def prefixes(project_id: str, states: frozenset[JobState] | None) -> list[str]:
    """The entry prefixes whose union holds every job a listing with this filter may return."""
    if states is None:
        return [f"{ALL}{project_id}/"]
    found = [f"{ENDED}{project_id}/{state.value}/" for state in sorted(states) if state.terminal]
    if any(not state.terminal for state in states):
        found.insert(0, f"{ACTIVE}{project_id}/")
    return found


def entry_names(job: Job) -> tuple[str, str]:
    """The project-index entry and the state entry (active, or ended in its state) of ``job``."""
    key = sort_key(position_of(job))
    return f"{ALL}{job.project_id}/{key}", state_entry(job.project_id, job.state, key)


def state_entry(project_id: str, state: JobState, key: str) -> str:
    if state.terminal:
        return f"{ENDED}{project_id}/{state.value}/{key}"
    return active_entry(project_id, key)


def active_entry(project_id: str, key: str) -> str:
    """The entry that keeps a job in the reconciler's sweep until it has ended and been retired."""
    return f"{ACTIVE}{project_id}/{key}"


def parse(name: str, prefix: str) -> Position:
    """The position an entry named ``name`` (listed under ``prefix``) points to."""
    inverted, _, job_id = name.removeprefix(prefix).partition("-")
    return Position(EPOCH_MAX_MS - int(inverted), job_id)


def project_of_active(name: str) -> str:
    """The project of an ``active/<project>/<key>`` entry."""
    return name.removeprefix(ACTIVE).partition("/")[0]


def merge(streams: Iterable[Iterator[Entry]]) -> Iterator[Entry]:
    """Entries of several listings in listing order, each position once (an ended job may
    still have its active entry for a moment)."""
    last: Position | None = None
    for entry in heapq.merge(*streams, key=lambda e: sort_key(e.position)):
        if entry.position != last:
            last = entry.position
            yield entry


def matches(entry: Entry, job: Job | None, project_id: str, states: frozenset[JobState] | None) -> bool:
    """True when ``entry`` truly points to ``job`` and the job belongs in the listing."""
    return (
        job is not None
        and job.project_id == project_id
        and position_of(job) == entry.position
        and (states is None or job.state in states)
    )


def stale(entry: Entry, job: Job | None, now: datetime, grace_s: float) -> bool:
    """True when ``entry`` can never point to a listed job again, so it may be deleted.

    The document is the truth. An entry whose document exists at another position, or is
    in a terminal state other than the one an ``ended/`` entry names, or has ended while
    the entry is ``active/``, is stale for good (states only move forward). An entry
    without a document may belong to a create in flight; it is stale once older than
    ``grace_s``.
    """
    prefix = entry.name.removesuffix(sort_key(entry.position))
    if job is None:
        return entry.last_modified is not None and (now - entry.last_modified).total_seconds() > grace_s
    if position_of(job) != entry.position:
        return True
    if prefix.startswith(ACTIVE):
        return job.state.terminal
    if prefix.startswith(ENDED):
        return job.state.terminal and not prefix.endswith(f"/{job.state.value}/")
    return False
