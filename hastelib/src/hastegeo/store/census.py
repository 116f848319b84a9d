"""The census: every unfinished job is found, also one without a due entry (ADR 0041).

The due index (:mod:`hastegeo.store.due`) makes a reconciler pass read only the jobs that are
due; the census is what keeps "an entry too many, never one too few" true for the jobs that
have no entry: young jobs (a job gets its entry once it has settled), jobs stored before the
index, and an entry lost to a crash or a race. It walks the names of the ``active/`` entries
and of the ``due/`` entries, a few pages a pass (names only: no document is read), and at the
end of each walk (a *cycle*) names the active jobs that no due entry named: the sweep reads
those, as it read every active job before. With up to a page of each, a cycle is one pass
(what the sweep did before, for jobs without an entry); at 10,000 running jobs it is forty.

A cycle's active names are also what the admission book's repair needs (the jobs still
unfinished; ADR 0032): it frees the seats of jobs that are not among them.

An entry moved while the walk is under way can be missed (the job then looks entry-less: one
read too many) or named twice; an active job created after the walk passed its place is seen
by the next cycle. Nothing is decided on a name: the sweep decides on the document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from hastegeo.store import due, index

if TYPE_CHECKING:
    from hastegeo.store.jobs import JobStore

PAGE = 250  # names a page: ~0.23 ms of client CPU each (ADR 0026); two pages a pass, ~0.12 s


@dataclass(frozen=True)
class Cycle:
    """One completed walk: the active entries listed, the jobs that due entries named, when it began."""

    active: list[index.Entry]
    indexed: frozenset[str]
    started_at: datetime

    @property
    def unfinished(self) -> frozenset[str]:
        return frozenset(entry.position.job_id for entry in self.active)

    def without_entry(self) -> list[index.Entry]:
        return [entry for entry in self.active if entry.position.job_id not in self.indexed]


@dataclass
class Census:
    """The walk's progress, kept between passes (one per reconciler)."""

    store: JobStore
    pages_per_pass: int = 1
    page_size: int = PAGE
    _active: list[index.Entry] = field(default_factory=list)
    _indexed: set[str] = field(default_factory=set)
    _tokens: dict[str, str | None] = field(default_factory=dict)
    _done: set[str] = field(default_factory=set)
    _started_at: datetime | None = None

    def step(self, now: datetime) -> Cycle | None:
        """Walk a few more pages; the cycle when this step completed one, else None."""
        if self._started_at is None:
            self._started_at = now
        for prefix in (index.ACTIVE, due.DUE):
            for _ in range(self.pages_per_pass):
                if prefix in self._done:
                    break
                blobs, token = self.store.census_page(prefix, self._tokens.get(prefix), self.page_size)
                if prefix == index.ACTIVE:
                    self._active.extend(self.store.active_entries(blobs))
                else:
                    self._indexed.update(due.job_of(str(blob.name)) for blob in blobs)
                self._tokens[prefix] = token
                if token is None:
                    self._done.add(prefix)
        if len(self._done) < 2:
            return None
        cycle = Cycle(self._active, frozenset(self._indexed), self._started_at)
        self._active, self._indexed, self._tokens, self._done, self._started_at = [], set(), {}, set(), None
        return cycle
