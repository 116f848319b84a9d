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
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from azure.core.exceptions import AzureError

from hastegeo.models.group import Group, is_group_id
from hastegeo.models.job import Job
from hastegeo.models.states import JobState
from hastegeo.pipeline.deps import PipelineDeps
from hastegeo.store.queues import GROUPS_QUEUE, SUBMIT_QUEUE, GroupMessage, JobMessage
from hastegeo.utils.errors import InvalidJobError, JobNotFoundError

log = logging.getLogger(__name__)
SOURCE = "after"
# A waiting job's deadline: it may wait as long as its upstreams run (its queued deadline starts at its release).
WAITING_DEADLINE = timedelta(days=30)
INLINE = 10  # dependents an upstream's end releases itself; with more, it hands them to the queue in chunks
CHUNK = 100  # dependents one delivery of a ``release`` message releases


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
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

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

    def register(self, job_id: str, upstreams: list[Upstream]) -> None:
        """Write the ``after/`` entries of a job about to be stored (before its document)."""
        groups = self._deps.groups
        if groups is None:
            return
        for upstream in upstreams:
            groups.add_dependent(upstream.id, job_id)
            if upstream.job is not None and not upstream.job.has_dependents:
                # The flag tells the upstream's end to list its dependents (a job without one lists nothing).
                # Set after the entry: an end that did not see it has ended, and the acceptor looks again.
                self._deps.journal.update(upstream.id, _flagged)

    def upstream_ended(self, upstream_id: str, *, flagged: bool = True) -> None:
        """Release every job waiting for ``upstream_id`` (a job or group that has just ended): up to
        :data:`INLINE` here, more through one ``release`` message (its chunks follow one another).

        ``flagged``: the upstream may have dependents (a job's ``hasDependents``; a group always may).

        Raises AzureError, ConflictError: not all released (the caller's step, or the sweep, does it again).
        """
        groups = self._deps.groups
        if groups is None or not flagged:
            return
        dependents, more = groups.dependents(upstream_id, size=INLINE)
        if more:
            self._deps.queues.send_text(GROUPS_QUEUE, GroupMessage(group_id=upstream_id, kind="release").encode())
            return
        for dependent in dependents:
            self.release(dependent)

    def chunk(self, upstream_id: str, resume_after: str | None) -> tuple[list[str], GroupMessage | None]:
        """The next :data:`CHUNK` jobs waiting for ``upstream_id`` after ``resume_after``, and the message of
        the chunk after them (None: the last)."""
        assert self._deps.groups is not None
        dependents, more = self._deps.groups.dependents(upstream_id, after=resume_after, size=CHUNK)
        following = GroupMessage(group_id=upstream_id, kind="release", resume_after=dependents[-1]) if more else None
        return dependents, following

    def release(self, job_id: str) -> Job | None:
        """Submit, end or leave waiting job ``job_id``, from its upstreams as stored now; the job as written.

        Raises AzureError, ConflictError: not released (the job kept changing); whoever called tries again.
        """
        deps = self._deps
        job = deps.store.find(job_id)
        if job is None or job.state is not JobState.QUEUED or not job.waiting_for:
            return None  # not stored yet (the reconciler releases it), or not waiting
        upstreams = {name: self.read(name) for name in job.waiting_for}
        bad = next((u.ended_badly for u in upstreams.values() if u is not None and u.ended_badly), None)
        left = [name for name, u in upstreams.items() if u is None or not u.succeeded]
        if bad is None and left == job.waiting_for:
            return None

        def change(current: Job) -> Job | None:
            if current.state is not JobState.QUEUED or current.waiting_for != job.waiting_for:
                return None
            if bad is not None:
                return deps.event(current, f"ended without running: {bad}", SOURCE, JobState.FAILED, reason=bad)
            if left:
                waiting = ", ".join(u.describe() for name in left if (u := upstreams[name]) is not None)
                return deps.event(current, f"waiting for {waiting}", SOURCE, waiting_for=left)
            deadline = deps.clock() + timedelta(seconds=deps.settings.pipeline.queued_deadline_s)
            return deps.event(
                current, "everything it waited for succeeded; submitting", SOURCE, waiting_for=[], deadline_at=deadline
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
