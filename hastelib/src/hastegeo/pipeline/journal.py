"""The job journal: every change of a job's state goes through here, in one order, in plain sight.

A step hands the journal a *change*: a pure function of the stored job that returns
the job it should become, or None for "nothing to do" (it may run more than once).
The journal then does, in this order and nothing else:

1. **the write**: the store's ETag-checked write of the document and its index
   entries (:meth:`hastegeo.store.jobs.JobStore.update`). Nothing below happens for a
   change that was not stored.
1a. **the followers** (ADR 0040): the job's group records the item's new state, a group whose
   last item ended is announced, and the jobs waiting for a job (or group) that ended are
   released or ended in their turn (each through this journal: the cascade).
   change that was not stored. A write that ends the job carries its cost, priced from
   the runs its backends told of (:mod:`hastegeo.costs.usage`, docs/adr/0038): the
   ending write itself, no write of its own.
2. **the events** of the state changes that write stored (ADR 0024), then their
   record: a second write marks them published on a job still unfinished; for a job
   that ended (its followers done), its marker for its project's cost totals
   (:meth:`hastegeo.pipeline.totals.CostTotals.add`, ADR 0051): one write that also stands
   for its ``active/`` entry's delete, since the reconciler's pass that adds the job to the
   month's totals then deletes that entry (a due entry the ending write kept goes here).
   Without cost totals, the ``active/`` entry goes here too (:meth:`JobStore.retire`).
3. **the seat**: a write that moved the job out of the states that hold an admission
   seat (to post-processing, to an end, or back to ``queued`` for another backend)
   frees it (ADR 0032). This is the one place a seat is freed.
4. **the hand-over**: the jobs that got the freed seats get a submit message, or are
   returned to the caller to submit itself, after the journal is done (the poll step's
   finishing does: a freed seat does not wait for a queue's round trip).
5. **the end**: a write that ended the job is counted, traced and logged, once.

Crash windows, and who repairs each:

- after 1, before 2's marker: the job ended and its cost is not in its project's totals. Its
  ``active/`` entry stays (it goes only with the marker's fold), and the reconciler's sweep
  writes the marker and retires it; counted once, as the totals name the jobs they count.
- after 2's marker, before the next pass: every reader of the totals counts the job (they add
  the month's markers); its ``active/`` entry stays until the pass's fold (the pass folds before
  it sweeps). A fold that wrote and did not delete is repeated by the next one, counting nothing twice.
- after 1, before 2: the change is stored and its events are not sent. The job keeps its
  ``active/`` entry, and the reconciler's sweep (:meth:`JobJournal.sweep`) publishes the
  events of a change older than :data:`PUBLISH_GRACE_S`; any later write of the job does too.
- after 1, before 1a: the item's group shows its previous state, and its dependents still wait.
  The job keeps its ``active/`` entry (an ended job is retired in step 2 at the earliest, and only
  once step 1a is done), the ending write of a job with followers made its due entry due at once
  (ADR 0047), so the next sweep reads it and hands it to the followers' repair: a group mark is a
  state, not a count, and a release reads the upstreams again, so doing either twice does nothing twice.
- after 2, before its record: the events go out again later (at least once; their ids say so).
- after 2, before 3: the seat stays taken. The job's next move frees it (post-processing,
  then its end), and the reconciler's repair frees the seats of jobs that have ended.
  Meanwhile a project may count one seat more than it runs, never one less.
- after 3, before 4: a job holds a seat and has no submit message. The reconciler sends
  it again (it re-sends the submit message of every queued job gone quiet).

The store stores (ETag writes and index entries); what a change *means* for events,
seats and metrics is decided here.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from azure.core.exceptions import AzureError

from hastegeo.costs.pricer import Price
from hastegeo.models import changes
from hastegeo.models.changes import StateChange
from hastegeo.models.job import Job
from hastegeo.models.moves import record
from hastegeo.models.states import JobState
from hastegeo.pipeline.admission import Admission
from hastegeo.pipeline.totals import CostTotals
from hastegeo.store.census import Census, Cycle
from hastegeo.store.jobs import JobStore, Update, Versioned
from hastegeo.telemetry import meter, tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.telemetry.meter import ReasonClass
from hastegeo.utils.errors import ConflictError, JobNotFoundError

log = logging.getLogger(__name__)

# Publishes the events of a job's state changes (hastegeo.events); raises AzureError when it could not.
Publish = Callable[[Job, list[StateChange]], None]
Change = Callable[[Job], Job | None]
# A state change whose event is still unpublished this long after it was stored was not published by
# its writer (a crash, an outage): the reconciler's sweep publishes it (ADR 0024). Younger ones are
# left to their writer, which is publishing them right now.
PUBLISH_GRACE_S = 60.0
# The states in which a job holds its admission seat (ADR 0032): from the submission until its
# provider's job ended. Leaving them frees it.
HOLDS_SEAT = frozenset({JobState.SUBMITTING, JobState.RUNNING, JobState.CANCEL_REQUESTED})


class Followers(Protocol):
    """What happens when a job's state changes, beyond the job itself (step 1a): groups and dependents."""

    def after_write(self, previous: JobState, job: Job) -> None: ...

    def repair(self, jobs: Sequence[Job], now: datetime) -> set[str]:
        """Do again what a crash left undone; the ids of the jobs whose followers are still not done."""
        ...


@dataclass(frozen=True)
class Written(Update):
    """What :meth:`JobJournal.update` did; ``admitted``: the jobs that got the seat it freed, when the
    caller asked to hand them over itself (:meth:`hastegeo.pipeline.admission.Admission.hand_over`)."""

    admitted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unfinished:
    """What the reconciler needs to know about an unfinished job (read from its document)."""

    job_id: str
    state: JobState | None
    deadline_at: datetime | None
    updated_at: datetime | None
    job: Job | None = None  # the document, when the sweep read it


class JobJournal:
    def __init__(
        self,
        store: JobStore,
        *,
        clock: Callable[[], datetime],
        history_limit: int,
        publish: Publish | None = None,
        admission: Admission | None = None,
        followers: Followers | None = None,
        price: Price | None = None,
        totals: CostTotals | None = None,
    ) -> None:
        """``publish`` sends job events (none: changes are numbered and left for a journal that has one);
        ``admission`` frees seats (none: no limits are set); ``price`` gives an ending job its cost (none:
        jobs end without one); ``totals`` keeps the projects' running totals of cost (none: not kept)."""
        self.store = store
        self._clock = clock
        self._history_limit = history_limit
        self._publish = publish
        self._admission = admission
        self._census = Census(store)
        # The census cycle the last sweep completed (None: none did): the active jobs, for the seat repair.
        self.census: Cycle | None = None
        self.followers = followers  # set once the steps it calls are built (the composition root)
        self._price = price
        self.totals = totals

    # -- writes --------------------------------------------------------------------------

    def create(self, job: Job) -> Versioned | None:
        """Store a new job (then its first event): the job as stored, or None when one with its id exists."""
        stored = self.store.create(job)
        return None if stored is None else self._published(stored, ended=False)

    def update(
        self,
        job_id: str,
        change: Change,
        *,
        known: Versioned | None = None,
        hand_over: bool = False,
        reason_class: ReasonClass = "workload",
    ) -> Written:
        """Write ``change`` (steps 1 to 5 of the module docstring); the job as stored after them.

        ``hand_over``: the jobs that get the seat this change frees are returned (:attr:`Written.admitted`)
        for the caller to submit itself, instead of getting submit messages. ``reason_class`` says which
        kind of failure an ending write records, for metrics and the span.

        Raises:
            JobNotFoundError: no such job.
            ConflictError: the document kept changing.
            AzureError: the write failed (nothing was stored; the step is retried).
        """
        written = self.store.update(job_id, self._priced(change), known=known)
        if not written.wrote or written.previous.terminal:
            # Nothing written, or a note on an ended job: its events and seat were the ending write's.
            return Written(written.job, written.etag, written.wrote, written.previous)
        followed = self._follow(written)
        version = self._published(written.version, ended=written.ended, retire=followed)
        admitted = self._free_seat(written, hand_over)
        if written.ended:
            ended_job(version.job, reason_class)
        return Written(version.job, version.etag, True, written.previous, admitted=tuple(admitted))

    def end(
        self,
        job_id: str,
        state: JobState,
        message: str,
        *,
        source: str,
        reason: str | None,
        reason_class: ReasonClass = "workload",
        before: Callable[[Job], Job] | None = None,
    ) -> bool:
        """Move a job to a terminal ``state`` with one event, unless it has already ended.

        ``before`` (pure) adds what happened first to the same write (a move not stored yet).
        Returns True when this call ended it (another writer may have got there first).
        """
        change = self.ending(state, message, source=source, reason=reason, before=before)
        return self.update(job_id, change, reason_class=reason_class).wrote

    def ending(
        self,
        state: JobState,
        message: str,
        *,
        source: str,
        reason: str | None,
        before: Callable[[Job], Job] | None = None,
    ) -> Change:
        """The change that moves a job to a terminal ``state`` with one event (None once it has ended)."""

        def change(job: Job) -> Job | None:
            if job.state.terminal:
                return None
            job = before(job) if before else job
            return record(
                job,
                now=self._clock(),
                limit=self._history_limit,
                message=message,
                source=source,
                state=state,
                reason=reason,
            )

        return change

    # -- the steps after a write ---------------------------------------------------------

    def _follow(self, written: Update) -> bool:
        """Step 1a: the followers of a state change; False when they failed (logged; the reconciler's sweep
        repairs it: an ended job stays in the active index, and its due entry is due at once, ADR 0047)."""
        if self.followers is None or written.job.state is written.previous:
            return True
        try:
            self.followers.after_write(written.previous, written.job)
        except (AzureError, ConflictError) as exc:
            log.info("job %s: followers not done (%s); the reconciler does them", written.job.id, type(exc).__name__)
            return False
        return True

    def _priced(self, change: Change) -> Change:
        """``change``, giving the job it ends its cost (step 1: in the ending write itself)."""
        price = self._price
        if price is None:
            return change

        def priced(job: Job) -> Job | None:
            new = change(job)
            if new is None or job.state.terminal or not new.state.terminal or new.cost is not None:
                return new
            return new.model_copy(update={"cost": price(new.usage)})

        return priced

    def _counted(self, job: Job, *, retire: bool = False) -> bool:
        """Step 2's record for an ended job: its marker for its project's totals (docs/adr/0051), which
        also stands for the delete of its ``active/`` entry when ``retire`` (the fold that adds it deletes
        the entry); False when it could not be written (the sweep does it)."""
        if self.totals is None:
            return True
        try:
            self.totals.add(job, retire=[self.store.active_name(job)] if retire else ())
        except AzureError as exc:
            log.warning("job %s: not yet marked for its project's cost totals (%s); the reconciler does", job.id, exc)
            return False
        return True

    def _retire(self, job: Job) -> None:
        """Record that an ended job's events are out and its followers done (step 2): with cost totals kept,
        its totals marker carries its ``active/`` entry's delete (one call); else that entry goes now. A due
        entry its ending write kept goes now either way: a release lost later puts it back (ADR 0047), and
        the fold must not take that one away."""
        if self.totals is None:
            self.store.retire(job)
        elif self._counted(job, retire=True):
            self.store.retire(job, active=False)

    def _published(self, version: Versioned, *, ended: bool, retire: bool = True) -> Versioned:
        """Publish the events of the job's stored changes not yet published, then record that they were.

        A publication that fails is logged and left to the sweep, never raised: the change is stored,
        and the step that stored it has done its work. Returns the version as stored now.
        """
        job = version.job
        waiting = changes.pending(job)
        if waiting and not self._send(job, waiting):
            return version
        if ended:  # an ended job's record is its active entry going (or its totals marker): no second write
            if retire:  # (kept while its followers are not done: the sweep does them)
                self._retire(job)
            return version
        if not waiting or self._publish is None:
            return version
        last = waiting[-1].seq
        try:
            marked = self.store.update(job.id, lambda j: changes.mark_published(j, last), known=version)
        except (AzureError, ConflictError) as exc:
            log.info("job %s: events up to %d published, not recorded (%s)", job.id, last, type(exc).__name__)
            return version
        return marked.version

    def _send(self, job: Job, waiting: list[StateChange]) -> bool:
        """Publish ``waiting``; False when it could not be (logged; the sweep publishes them)."""
        if self._publish is None:
            return True
        try:
            self._publish(job, waiting)
        except AzureError as exc:
            log.warning(
                "job %s: events %d-%d not published (%s); the reconciler publishes them",
                job.id,
                waiting[0].seq,
                waiting[-1].seq,
                type(exc).__name__,
            )
            return False
        return True

    def _free_seat(self, written: Update, hand_over: bool) -> list[str]:
        """Free the seat of a job that this write moved out of :data:`HOLDS_SEAT`; the jobs that got it.

        They get submit messages, unless the caller hands them over itself (``hand_over``). A failure
        costs only time: the job's next move frees it again, and the reconciler's repair frees the seats
        of jobs that have ended.
        """
        state = written.job.state
        if self._admission is None or state is written.previous or state in HOLDS_SEAT:
            return []
        try:
            return self._admission.free([written.job.id], send=not hand_over)
        except (ConflictError, AzureError) as exc:
            log.info("admission: seat of job %s not freed yet (%s)", written.job.id, type(exc).__name__)
            return []

    # -- the reconciler's sweep ----------------------------------------------------------

    def sweep(self, now: datetime | None = None) -> list[Unfinished]:
        """The unfinished jobs that are due, after finishing what a writer left undone (the crash windows above).

        Reads the jobs that are due (the due index) and, once per census cycle, the active jobs without a
        due entry (ADR 0041): with few jobs, every unfinished one each pass, as before. The events of
        a change older than :data:`PUBLISH_GRACE_S` are published; an ended job whose events are
        out is retired from the active index.
        """
        now = now or datetime.now(UTC)  # compared with storage's own clock (blob times), never a test's
        found = []
        jobs = self._due_and_unindexed(now)
        unfollowed: set[str] = set()  # ended jobs whose followers are not done: kept for the next sweep
        if self.followers is not None:
            try:
                unfollowed = self.followers.repair(jobs, now)
            except (AzureError, ConflictError) as exc:  # the next sweep tries again
                log.warning("sweep: followers' repair not finished (%s)", type(exc).__name__)
                unfollowed = {job.id for job in jobs}
        for job in jobs:
            unpublished = self._catch_up(job, now)
            if not job.state.terminal:
                found.append(Unfinished(job.id, job.state, job.deadline_at, job.updated_at, job=job))
            elif not unpublished and job.id not in unfollowed and self._counted(job):
                self.store.retire(job, repair=True)
        return found

    def _due_and_unindexed(self, now: datetime) -> list[Job]:
        """The jobs whose due entry is due, and, each time the census completes a cycle, the active jobs
        that have no due entry (ADR 0041); the settled ones among them get theirs."""
        jobs = {job.id: job for job in self.store.due(self._clock())}
        self.census = self._census.step(self._clock())
        if self.census is None:
            return list(jobs.values())
        unindexed = [e for e in self.census.without_entry() if e.position.job_id not in jobs]
        for job in self.store.behind(unindexed, now):
            jobs.setdefault(job.id, job)
            if not job.state.terminal:
                with contextlib.suppress(ConflictError):  # the job keeps changing: its writes give it the entry
                    self.store.index_due(job)
        return list(jobs.values())

    def _catch_up(self, job: Job, now: datetime) -> bool:
        """Publish the job's unpublished events once its writer had time to; True while some remain."""
        if self._publish is None or not changes.pending(job):
            return False
        if (now - job.updated_at).total_seconds() < PUBLISH_GRACE_S:
            return True
        try:
            latest = self.store.read(job.id)
        except JobNotFoundError:
            return False
        if latest.job.state.terminal:  # recorded by the caller retiring its active entry
            return not self._send(latest.job, changes.pending(latest.job))
        return bool(changes.pending(self._published(latest, ended=False).job))


def ended_job(job: Job, reason_class: ReasonClass = "workload") -> None:
    """Count, trace and log a job that one write has just ended (once per job, from that write)."""
    meter.job_ended(job, reason_class)
    tracer.annotate(job)  # the step's span ends with the job's final state (the "stuck jobs" query reads it)
    if job.state is JobState.FAILED:
        tracer.fail(job.reason or "failed", reason_class)
    log.info(
        "job %s %s: %s",
        job.id,
        job.state.value,
        job.reason or "",
        extra=job_fields(job, reason_class=reason_class if job.state is JobState.FAILED else None),
    )
