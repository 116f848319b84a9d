"""The reconciler (timer ``reconcile``): no job stuck without a deadline, no provider job left behind.

Every run, from the store's due index (the jobs due now, and once per census cycle those
without an entry; ADR 0041, over ADR 0011's active index, which the census also repairs), and
after the journal finished what a crashed writer left undone (:meth:`JobJournal.sweep`):

- a job past its deadline is failed with the reason, and its provider job cancelled;
- a job still queued or submitting after a while gets its submit message again
  (the message may have been lost with a crash; a duplicate is harmless);
- a running job whose poll chain has gone quiet gets it re-armed with its
  *current* sequence number: the job records when the chain's pending message is
  due, and a live chain replaces that record every time it polls, so only a
  message long overdue (:data:`CHAIN_GRACE_S`) is taken for lost. Should the chain
  be alive after all (a backlog), the extra message is a duplicate and is dropped;
  if it died, the job is followed again. A healthy chain costs the sweep nothing
  but the read it makes of every unfinished job;
- a provider job whose record has ended, or does not exist, is cancelled.

Each action is safe to repeat, so two reconcilers running at once only
duplicate work that the steps themselves deduplicate.

Failures are contained where they happen: a job whose record cannot be
handled is skipped, and a backend whose listing fails (an outage, a 403)
costs only its own orphan sweep. A failing source is logged as one readable
line when the problem starts or changes, and again when it recovers — not
as a traceback every minute (:class:`Conditions`). The same holds for the
run's summary and for a record that cannot be handled: a line when it
changes; the metrics (``haste.reconcile.*``) count every run.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from azure.core.exceptions import AzureError

from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import REENQUEUE_AFTER_S
from hastegeo.pipeline.admission.board import CapacityBoard, summarize
from hastegeo.pipeline.deadlines import expire
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.pipeline.journal import Unfinished
from hastegeo.store import due
from hastegeo.store.queues import SUBMIT_QUEUE, JobMessage
from hastegeo.telemetry import meter, tracer
from hastegeo.telemetry.logs import job_fields
from hastegeo.utils.errors import ConflictError, HasteError, describe_exception

log = logging.getLogger(__name__)
SOURCE = "reconcile"
FOLLOWED_STATES = frozenset({JobState.RUNNING, JobState.CANCEL_REQUESTED, JobState.POSTPROCESSING})
# How long past its due time a poll message may stay unhandled before its chain is taken for lost. A
# message that fails is delivered again after host.json's visibilityTimeout, up to maxDequeueCount times
# (then the poison step ends the job). A burst's backlog, or a post-processing longer than this (the
# functionTimeout allows 10 minutes), can hold it longer: the duplicate then costs one dropped poll, or
# one more post-processing attempt, as it did on every sweep before the due time was kept.
CHAIN_GRACE_S = due.CHAIN_GRACE_S


def chain_quiet(due_at: datetime | None, now: datetime) -> bool:
    """Whether a poll chain whose pending message is due at ``due_at`` needs a new message (pure).

    Records written before the due time was kept (or by the release before it) have none: their chain is
    re-armed on every sweep, as before.
    """
    return due_at is None or (now - due_at).total_seconds() > CHAIN_GRACE_S


@dataclass
class ReconcileReport:
    expired: list[str] = field(default_factory=list)
    resubmitted: list[str] = field(default_factory=list)
    rearmed: list[str] = field(default_factory=list)
    orphans_cancelled: list[str] = field(default_factory=list)
    # What could not be looked at this run, and why: "jobs" (the job listing) or a backend name.
    unreachable: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        text = (
            f"expired {len(self.expired)}, resubmitted {len(self.resubmitted)}, "
            f"re-armed {len(self.rearmed)}, orphans cancelled {len(self.orphans_cancelled)}"
        )
        if self.unreachable:
            text += f", unreachable: {', '.join(sorted(self.unreachable))}"
        return text


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class Conditions:
    """The current problem of each source, so an outage is reported when it starts, changes or ends.

    Pure bookkeeping (no I/O): :meth:`failed` and :meth:`recovered` say whether
    the caller should log. Two causes are the same condition when they differ
    only in object addresses, which connection errors embed.
    """

    def __init__(self) -> None:
        self._problems: dict[str, str] = {}

    def failed(self, source: str, cause: str) -> bool:
        """Remember ``cause`` for ``source``; True when this is news (a new or different problem)."""
        condition = _ADDRESS.sub("0x…", cause)
        news = self._problems.get(source) != condition
        self._problems[source] = condition
        return news

    def recovered(self, source: str) -> bool:
        """Forget ``source``'s problem; True when it had one (its recovery is news)."""
        return self._problems.pop(source, None) is not None


class ReconcileStep:
    def __init__(self, deps: PipelineDeps, board: CapacityBoard | None = None) -> None:
        self._deps = deps
        self._board = board
        # Kept across runs (the timer reuses this step): what is failing right now.
        self._conditions = Conditions()
        self._indexed = False  # the store's state index is known complete (ADR 0011)

    def run(self) -> ReconcileReport:
        with tracer.step_span("reconcile", traceparent=None, kind=tracer.INTERNAL) as span:
            report = ReconcileReport()
            now = self._deps.clock()
            self._fold_costs()
            self._jobs(report)
            for backend in self._deps.service.listing_backends():
                self._orphans(backend, report)
            findings = {
                "expired": report.expired,
                "resubmitted": report.resubmitted,
                "rearmed": report.rearmed,
                "orphans_cancelled": report.orphans_cancelled,
            }
            for finding, jobs in findings.items():
                meter.reconcile_finding(finding, len(jobs))
            if span.is_recording():
                span.set_attributes({f"haste.reconcile.{name}": len(jobs) for name, jobs in findings.items()})
            # The same findings run after run (a job that stays queued) are one line, not one a minute.
            acted = report.expired or report.resubmitted or report.orphans_cancelled
            if not acted:
                self._conditions.recovered("summary")
            elif self._conditions.failed("summary", report.summary()):
                log.info("reconcile at %s: %s", now.isoformat(), report.summary())
            return report

    def _fold_costs(self) -> None:
        """The jobs that ended since the last pass, into their months' cost totals, and retired (ADR 0051);
        best effort: a marker left is folded by the next pass, and counted once."""
        totals = self._deps.journal.totals
        if totals is None:
            return
        try:
            totals.fold()
        except (AzureError, ConflictError) as exc:
            log.info("reconcile: ended jobs' costs not folded into the totals yet (%s); the next pass does", exc)

    def _commit_costs(self) -> None:
        """Budgeted projects' running jobs' cost so far, into their month's totals (ADR 0042); best effort."""
        deps = self._deps
        if deps.budgets is None or deps.pricer is None or deps.journal.totals is None:
            return
        try:
            deps.budgets.commit(deps.store, deps.journal.totals, deps.pricer)
        except (AzureError, ConflictError, TimeoutError) as exc:
            log.info("reconcile: running jobs' cost so far not recorded (%s); the next pass does", exc)

    def _jobs(self, report: ReconcileReport) -> None:
        """Deadlines, lost submit messages and dead poll chains, for every unfinished job."""
        try:
            if not self._indexed:  # jobs stored before the index get their entries first
                backfilled = self._deps.store.backfill_index()
                if backfilled is not None:
                    log.info("reconcile: indexed %d job(s) stored before the state index", backfilled)
                self._indexed = True
            unfinished = self._deps.journal.sweep()
            census = self._deps.journal.census
            if self._deps.admission is not None and census is not None:
                # seats of jobs that ended unseen are freed (ADR 0032), once a census cycle named every active job
                self._deps.admission.repair(census.unfinished, census.started_at)
        except AzureError as exc:  # storage is down: nothing to sweep this run
            self._failed("jobs", "cannot list the unfinished jobs", exc, report)
            return
        self._post_board([item.job for item in unfinished if item.job is not None])
        self._commit_costs()
        for item in unfinished:
            try:
                self._reconcile(item, report)
            except HasteError as exc:  # one bad record must not stop the sweep
                self._bad_record(item.job_id, exc)
            except AzureError as exc:  # storage went away mid-sweep: the next run picks up
                self._failed("jobs", "cannot update the unfinished jobs", exc, report)
                return
        self._recovered("jobs", "storage answers again; the unfinished jobs were swept")

    def _reconcile(self, item: Unfinished, report: ReconcileReport) -> None:
        deps = self._deps
        now = deps.clock()
        if item.deadline_at is not None and now > item.deadline_at:
            self._expire(item.job_id, report)
            return
        quiet = item.updated_at is None or now - item.updated_at > timedelta(seconds=REENQUEUE_AFTER_S)
        if item.job is not None and due.waiting(item.job):
            return  # it has no submit message to lose: its upstreams' ends (or its deadline) move it
        if item.state in (JobState.QUEUED, JobState.SUBMITTING) and quiet:
            with tracer.within(None):  # no traceparent: the submit step finds the job's own trace
                deps.queues.send(SUBMIT_QUEUE, JobMessage(job_id=item.job_id, kind="submit"))
            report.resubmitted.append(item.job_id)
        elif item.state in FOLLOWED_STATES:
            job = item.job or deps.store.get(item.job_id)
            if not job.state.terminal and chain_quiet(job.poll_due_at, now):
                with tracer.within(job.trace_parent):  # the re-armed chain continues the job's trace
                    deps.chain.send(job.id, job.poll_seq, 0)
                report.rearmed.append(job.id)

    def _post_board(self, jobs: list[Job]) -> None:
        """Each backend's queue from the documents just read (no extra read), for ``GET /api/backends``."""
        if self._board is None:
            return
        try:
            self._board.write(summarize(jobs, self._deps.clock(), self._board.read()))
        except AzureError as exc:  # a view only: the next pass writes it again
            log.info("reconcile: capacity board not written: %s", describe_exception(exc))

    def _expire(self, job_id: str, report: ReconcileReport) -> None:
        job = self._deps.store.find(job_id)
        if job is None:
            return
        # A span of its own in the job's trace: the job's failure is recorded there, not on the sweep's span.
        with tracer.step_span("expire", traceparent=job.trace_parent, job_id=job_id, kind=tracer.INTERNAL):
            if expire(self._deps, job, SOURCE):
                report.expired.append(job_id)

    def _orphans(self, backend: str, report: ReconcileReport) -> None:
        """Cancel ``backend``'s provider jobs whose record has ended or does not exist."""
        deps = self._deps
        try:
            active = deps.service.list_active_on(backend)
        except Exception as exc:  # any failure of one backend stays with that backend
            self._failed(backend, f"cannot list the active jobs of backend {backend}", exc, report)
            return
        self._recovered(backend, f"can list the active jobs of backend {backend} again")
        for job_id, handle in active:
            try:
                job = deps.store.find(job_id)
            except HasteError as exc:
                self._bad_record(job_id, exc)
                continue
            except AzureError as exc:  # without the records, no job can be called an orphan
                self._failed("jobs", "cannot read the job records", exc, report)
                return
            if job is not None and not job.state.terminal:
                continue
            deps.cancel_provider(handle, job_id, "the reconciler's next run")  # the other orphans do not wait
            report.orphans_cancelled.append(job_id)

    def _failed(self, source: str, what: str, exc: BaseException, report: ReconcileReport) -> None:
        cause = describe_exception(exc)
        report.unreachable[source] = cause
        meter.reconcile_error(source)
        if self._conditions.failed(source, cause):
            log.warning("reconcile: %s (%s); the rest of the sweep goes on, and this is tried every run", what, cause)

    def _bad_record(self, job_id: str, exc: HasteError) -> None:
        """A record the sweep cannot handle: one line when its problem starts or changes, not every run."""
        cause = describe_exception(exc)
        if self._conditions.failed(f"job {job_id}", cause):
            log.warning("reconcile: job %s: %s", job_id, cause, extra=job_fields(job_id=job_id))

    def _recovered(self, source: str, what: str) -> None:
        if self._conditions.recovered(source):
            log.info("reconcile: %s", what)
