"""Dependencies (ADR 0040): a job that waits for jobs or groups (``after``) of its project.

A waiting job is stored ``queued`` with ``waitingFor`` set and no submit message; the
submit step leaves it alone. Its ``after/<upstream>/<job>`` entries are written before its
document, so a release that runs once an upstream ended finds every dependent stored.

:meth:`Dependencies.release` re-reads the upstreams a job still waits for and, in one
journal write: drops the ones that succeeded (once none is left, the job gets its normal
queued deadline and a submit message), or ends the job without running when one failed or
was cancelled, its reason naming that upstream and its cause. That ending goes through the
journal like any other, so the job's own dependents follow (the cascade). A release is a
function of what is stored, so running it twice does nothing twice.

An upstream's end releases at most :data:`INLINE` dependents in the step that ended it; with more
(10,000 items waiting for one training job, one package job per tile…), it sends one ``release``
message on the groups queue instead, and each delivery releases a chunk of :data:`CHUNK`
(:meth:`hastegeo.pipeline.groups.GroupSteps.handle`), then sends the next: no delivery writes more
than a chunk, and a delivery that dies is delivered again (ADR 0047).

Two windows a host could die in are closed here (ADR 0047, "Residual windows"):

- **A dependent stored as its upstream ends.** The acceptor looks at the upstreams again *after* writing
  the ``after/`` entries (and the flag) and *before* the document (:meth:`Dependencies.register`): an
  upstream that ended before that look is seen by it, so the job is stored released, or due at once
  (``releaseDue``) when the upstream ended badly; one that ends after it lists the entry. Should its
  release find the entry without a document (the acceptor is between the two writes), the release is not
  done (:class:`NotStoredYet`): the upstream stays due for the next sweep, or, from a release chunk, is
  re-armed (:meth:`Dependencies.rearm`). An entry written more than :data:`STORING_GRACE_S` ago and still
  without a document belonged to a request that died: it is passed over.
- **A release message the host gave up on** (the groups queue's poison step) re-arms its upstream the same
  way, so the next sweep releases again what waits for it (a release repeated does nothing twice).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from azure.core.exceptions import AzureError

from hastegeo.models.group import Group, is_group_id
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.store.groups import Listed
from hastegeo.store.queues import GROUPS_QUEUE, SUBMIT_QUEUE, GroupMessage, JobMessage
from hastegeo.utils.errors import ConflictError, InvalidJobError, JobNotFoundError

log = logging.getLogger(__name__)
SOURCE = "after"
# A waiting job's deadline: it may wait as long as its upstreams run (its queued deadline starts at its release).
WAITING_DEADLINE = timedelta(days=30)
INLINE = 10  # dependents an upstream's end releases itself; with more, it hands them to the queue in chunks
CHUNK = 100  # dependents one delivery of a ``release`` message releases
# A dependent's document follows its ``after/`` entry within one request: still missing this long after the
# entry was written, the request that wrote it died before storing the job, and nothing waits there.
STORING_GRACE_S = 600.0


class NotStoredYet(ConflictError):
    """A job listed as waiting for an upstream that ended is not stored yet (its acceptor is between its
    ``after/`` entry and its document, or died there): the release is not done, the next sweep repeats it."""


@dataclass(frozen=True)
class Upstream:
    """A job or a group named in ``after``, as read now."""

    id: str
    job: Job | None = None
    group: Group | None = None

    @property
    def succeeded(self) -> bool:
        if self.job is not None:
            return self.job.state is JobState.SUCCEEDED
        return self.group is not None and self.group.succeeded

    @property
    def ended_badly(self) -> str | None:
        """Why the waiting job cannot run (None: it may still)."""
        if self.job is not None:
            if self.job.state in (JobState.FAILED, JobState.CANCELLED):
                verb = "failed" if self.job.state is JobState.FAILED else "was cancelled"
                return f"upstream job {self.id} {verb}: {self.job.reason or self.job.state.value}"
            return None
        group = self.group
        if group is None or not group.complete or group.succeeded:
            return None
        counts = group.counts()
        first = group.failures[0] if group.failures else None
        cause = (
            f" (first: item {first.index}, job {first.job_id}: {first.reason or first.state.value})" if first else ""
        )
        return (
            f"upstream group {self.id} ended with {counts['failed']} failed and {counts['cancelled']} cancelled{cause}"
        )

    def describe(self) -> str:
        if self.job is not None:
            return f"job {self.id} ({self.job.state.value})"
        assert self.group is not None
        counts = self.group.counts()
        ended = counts["succeeded"] + counts["failed"] + counts["cancelled"]
        return f"group {self.id} ({ended} of {self.group.item_count} ended)"


def _flagged(job: Job) -> Job | None:
    return None if job.has_dependents else job.model_copy(update={"has_dependents": True})


class Dependencies:
    """Dependencies' reads and releases; one object per step (it remembers the dependents its releases found
    not stored, for :meth:`pending`)."""

    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps
        self._written: dict[str, datetime | None] = {}  # when the entries this object listed were written
        self._unstored: set[str] = set()

    def read(self, upstream_id: str) -> Upstream | None:
        if is_group_id(upstream_id):
            groups = self._deps.groups
            group = None if groups is None else groups.find(upstream_id)
            return None if group is None else Upstream(upstream_id, group=group)
        job = self._deps.store.find(upstream_id)
        return None if job is None else Upstream(upstream_id, job=job)

    def resolve(self, project_id: str, after: list[str], field: str = "after") -> list[Upstream]:
        """The upstreams of a request, each of ``project_id``.

        Raises:
            InvalidJobError: one is missing or of another project (the same words for both: no existence leak).
        """
        found = []
        for index, upstream_id in enumerate(after):
            upstream = self.read(upstream_id)
            owner = None
            if upstream is not None:
                owner = upstream.job.project_id if upstream.job is not None else upstream.group.project_id  # type: ignore[union-attr]
            if upstream is None or owner != project_id:
                path = f"{field}[{index}]"
                raise InvalidJobError(f"{path}: no job or group {upstream_id!r} in project {project_id}", field=path)
            found.append(upstream)
        return found

    def register(self, job_id: str, upstreams: list[Upstream]) -> list[Upstream]:
        """Write the ``after/`` entries of a job about to be stored (before its document), then look at its
        upstreams again: the upstreams as they are once the entries are written.

        An upstream that ends after this look lists the job's entry (its flag is set before the look); one
        that ended before it is seen ended here, so the caller stores the job released (or due at once): no
        look after the document is needed, and a host dying after the document loses nothing (ADR 0047).
        """
        groups = self._deps.groups
        if groups is None:
            return upstreams
        looked = []
        for upstream in upstreams:
            groups.add_dependent(upstream.id, job_id)
            if upstream.job is not None and not upstream.job.has_dependents:
                # The flag tells the upstream's end to list its dependents (a job without one lists nothing).
                # Set after the entry; the write answers the upstream as it is now: that is the look.
                looked.append(Upstream(upstream.id, job=self._deps.journal.update(upstream.id, _flagged).job))
            elif upstream.job is not None and upstream.job.state.terminal:
                looked.append(upstream)  # a job's end is final
            else:
                looked.append(self.read(upstream.id) or upstream)
        return looked

    def upstream_ended(self, upstream_id: str, *, flagged: bool = True) -> None:
        """Release every job waiting for ``upstream_id`` (a job or group that has just ended): up to
        :data:`INLINE` here, more through one ``release`` message (its chunks follow one another).

        ``flagged``: the upstream may have dependents (a job's ``hasDependents``; a group always may).

        Raises:
            NotStoredYet: a dependent listed is not stored yet (the caller keeps the upstream for the next sweep).
            AzureError, ConflictError: not all released (the caller's step, or the sweep, does it again).
        """
        groups = self._deps.groups
        if groups is None or not flagged:
            return
        listed, more = groups.dependents(upstream_id, size=INLINE)
        if more:
            self._deps.queues.send_text(GROUPS_QUEUE, GroupMessage(group_id=upstream_id, kind="release").encode())
            return
        for dependent in self._listed(listed):
            self.release(dependent)
        unstored = self.pending(upstream_id)
        if unstored:
            raise NotStoredYet(f"jobs {', '.join(unstored)} waiting for {upstream_id} are not stored yet")

    def _listed(self, listed: list[Listed]) -> list[str]:
        self._written.update(listed)
        return [entry.job_id for entry in listed]

    def pending(self, upstream_id: str) -> list[str]:
        """The dependents this object's releases found listed and not stored that may still be: their request
        may be between its entry and its document. One whose entry was written more than
        :data:`STORING_GRACE_S` ago belonged to a request that died; it is passed over (logged)."""
        now = self._deps.clock()
        young: list[str] = []
        dead: list[str] = []
        for job_id in sorted(self._unstored):
            written = self._written.get(job_id)
            old = written is not None and (now - written).total_seconds() > STORING_GRACE_S
            (dead if old else young).append(job_id)
        if dead:
            log.info("after: %s listed as waiting for %s, never stored; passed over", ", ".join(dead), upstream_id)
        return young

    def rearm(self, upstream_id: str) -> bool:
        """Have the next sweep release again the jobs waiting for ``upstream_id``, an upstream that ended: a
        job's due entry (due at its end) is put back, a group's open entry (ADR 0047). False: it has not ended
        (its end releases them) or is gone.

        Raises AzureError, ConflictError: not re-armed.
        """
        groups = self._deps.groups
        if not is_group_id(upstream_id):
            return self._deps.store.rearm(upstream_id)
        group = None if groups is None else groups.find(upstream_id)
        if groups is None or group is None or group.completed_at is None:
            return False
        groups.reopen(upstream_id)
        return True

    def chunk(self, upstream_id: str, resume_after: str | None) -> tuple[list[str], GroupMessage | None]:
        """The next :data:`CHUNK` jobs waiting for ``upstream_id`` after ``resume_after``, and the message of
        the chunk after them (None: the last)."""
        assert self._deps.groups is not None
        listed, more = self._deps.groups.dependents(upstream_id, after=resume_after, size=CHUNK)
        dependents = self._listed(listed)
        following = GroupMessage(group_id=upstream_id, kind="release", resume_after=dependents[-1]) if more else None
        return dependents, following

    def release(self, job_id: str) -> Job | None:
        """Submit, end or leave waiting job ``job_id``, from its upstreams as stored now; the job as written.

        Raises AzureError, ConflictError: not released (the job kept changing); whoever called tries again.
        """
        deps = self._deps
        job = deps.store.find(job_id)
        if job is None:  # listed, not stored yet: its acceptor is between the two writes, or died there
            self._unstored.add(job_id)
            return None
        if job.state is not JobState.QUEUED or not job.waiting_for:
            return None  # not waiting
        upstreams = {name: self.read(name) for name in job.waiting_for}
        bad = next((u.ended_badly for u in upstreams.values() if u is not None and u.ended_badly), None)
        left = [name for name, u in upstreams.items() if u is None or not u.succeeded]
        if bad is None and left == job.waiting_for and not job.release_due:
            return None

        def change(current: Job) -> Job | None:
            if current.state is not JobState.QUEUED or current.waiting_for != job.waiting_for:
                return None
            if bad is not None:
                ending = f"ended without running: {bad}"
                return deps.event(current, ending, SOURCE, JobState.FAILED, reason=bad, release_due=False)
            if left == current.waiting_for:  # due at once for an upstream that ended badly, retried since
                return current.model_copy(update={"release_due": False}) if current.release_due else None
            if left:
                waiting = ", ".join(u.describe() for name in left if (u := upstreams[name]) is not None)
                return deps.event(current, f"waiting for {waiting}", SOURCE, waiting_for=left, release_due=False)
            deadline = deps.clock() + timedelta(seconds=deps.settings.pipeline.queued_deadline_s)
            return deps.event(
                current,
                "everything it waited for succeeded; submitting",
                SOURCE,
                waiting_for=[],
                deadline_at=deadline,
                release_due=False,
            )

        try:
            written = deps.journal.update(job_id, change)
        except JobNotFoundError:
            return None
        if written.wrote and written.job.state is JobState.QUEUED and not written.job.waiting_for:
            try:
                deps.queues.send(SUBMIT_QUEUE, JobMessage(job_id=job_id, kind="submit"))
            except AzureError:
                log.info("after: job %s released, its submit message is left to the reconciler", job_id)
        return written.job
