"""The reconciler (timer ``reconcile``): no job stuck without a deadline, no provider job left behind.

Every run, from blob metadata alone (one listing):

- a job past its deadline is failed with the reason, and its provider job cancelled;
- a job still queued or submitting after a while gets its submit message again
  (the message may have been lost with a crash; a duplicate is harmless);
- a running job gets its poll chain re-armed with its *current* sequence
  number: if the chain is alive the extra message is a duplicate and is
  dropped, if it died with a crash the job is followed again;
- a provider job whose record has ended, or does not exist, is cancelled.

Each action is safe to repeat, so two reconcilers running at once only
duplicate work that the steps themselves deduplicate.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from hastegeo.compute.contract import ComputeJobHandle
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import REENQUEUE_AFTER_S
from hastegeo.pipeline.deadlines import expire
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.store.jobs import Unfinished
from hastegeo.store.queues import POLL_QUEUE, SUBMIT_QUEUE, JobMessage
from hastegeo.utils.errors import HasteError, describe_exception

log = logging.getLogger(__name__)
SOURCE = "reconcile"
FOLLOWED_STATES = frozenset({JobState.RUNNING, JobState.CANCEL_REQUESTED, JobState.POSTPROCESSING})


@dataclass
class ReconcileReport:
    expired: list[str] = field(default_factory=list)
    resubmitted: list[str] = field(default_factory=list)
    rearmed: list[str] = field(default_factory=list)
    orphans_cancelled: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"expired {len(self.expired)}, resubmitted {len(self.resubmitted)}, "
            f"re-armed {len(self.rearmed)}, orphans cancelled {len(self.orphans_cancelled)}"
        )


class ReconcileStep:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def run(self) -> ReconcileReport:
        report = ReconcileReport()
        now = self._deps.clock()
        for item in self._deps.store.unfinished():
            try:
                self._reconcile(item, report)
            except HasteError as exc:  # one bad record must not stop the sweep
                log.warning("reconcile: job %s: %s", item.job_id, describe_exception(exc))
        self._orphans(report)
        if report.expired or report.resubmitted or report.orphans_cancelled:
            log.info("reconcile at %s: %s", now.isoformat(), report.summary())
        return report

    def _reconcile(self, item: Unfinished, report: ReconcileReport) -> None:
        deps = self._deps
        now = deps.clock()
        if item.deadline_at is not None and now > item.deadline_at:
            self._expire(item.job_id, report)
            return
        quiet = item.updated_at is None or now - item.updated_at > timedelta(seconds=REENQUEUE_AFTER_S)
        if item.state in (JobState.QUEUED, JobState.SUBMITTING) and quiet:
            deps.queues.send(SUBMIT_QUEUE, JobMessage(job_id=item.job_id, kind="submit"))
            report.resubmitted.append(item.job_id)
        elif item.state in FOLLOWED_STATES:
            job = deps.store.get(item.job_id)
            if not job.state.terminal:
                deps.queues.send(POLL_QUEUE, JobMessage(job_id=job.id, kind="poll", attempt=job.poll_seq))
                report.rearmed.append(job.id)

    def _expire(self, job_id: str, report: ReconcileReport) -> None:
        job = self._deps.store.find(job_id)
        if job is not None and expire(self._deps, job, SOURCE):
            report.expired.append(job_id)

    def _orphans(self, report: ReconcileReport) -> None:
        deps = self._deps
        for job_id, handle in deps.service.list_active():
            job = deps.store.find(job_id)
            if job is not None and not job.state.terminal:
                continue
            self._cancel(job_id, handle)
            report.orphans_cancelled.append(job_id)

    def _cancel(self, job_id: str, handle: ComputeJobHandle) -> None:
        try:
            self._deps.service.cancel(handle)
        except HasteError as exc:
            log.warning("reconcile: cancel of %s failed, will retry: %s", job_id, describe_exception(exc))
