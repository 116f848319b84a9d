"""The due index: which unfinished jobs the reconciler must look at, by when (pure; ADR 0041).

An entry is an empty blob ``due/<bucket>/<job id>``; ``<bucket>`` names the start of a
:data:`GRID_S` window (``YYYYMMDDHHMM``, so names sort by time) at or before the moment the
reconciler must read the job: its poll chain overdue by :data:`CHAIN_GRACE_S`, its deadline,
or a queued job gone quiet for :data:`QUIET_S`. A pass lists the buckets already due and reads
only those jobs (:meth:`hastegeo.store.jobs.JobStore.due`).

The document names its entry (``Job.due_entry``); the store's writes keep the two true the way
the state index is kept (ADR 0011): the new entry before the document, the old one deleted after,
so a crash leaves an entry too many (the reconciler deletes it: its name is not the document's),
never one too few. An entry is a hint: every decision is taken on the document.

Costs on a job's own path: a job gets an entry only once it has *settled* (its chain's due time,
or its last write, at least :data:`SETTLE_S` after its creation), so a job that starts and ends
within minutes never writes one (its 26 storage calls are unchanged); the entry moves only when
the due time crosses into another bucket (with :data:`GRID_S` ≤ :data:`CHAIN_GRACE_S`, a live
chain's entry is never due). Jobs without an entry (young ones, and those stored before this
index) are found by the census (:mod:`hastegeo.store.census`).

Jobs that others follow (ADR 0047): a job waiting for others (``waitingFor``) has its entry from its
first write, at its deadline: the pass never reads it while it waits (10,000 waiting items cost a
pass nothing), and the census does not read it either. What the pass must find instead is a release
lost to a host dying after an upstream's end: the ending write of a job that has dependents, or of a
group's item, moves its entry to the bucket of its end (:func:`ended_entry`), so the next pass reads
it, hands it to the followers' repair, and only then retires it (which deletes the entry). A job stored
waiting for an upstream that had already ended badly (``releaseDue``: its acceptor saw it so just before
storing it) is due at once instead, so the next pass ends it should its acceptor die before doing so.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hastegeo.models.job import Job
from hastegeo.models.states import JobState

DUE = "due/"
GRID_S = 300
# How long past its due time a poll message may stay unhandled before its chain is taken for lost
# (hastegeo.pipeline.reconcile.chain_quiet). GRID_S must not exceed it: see the module docstring.
CHAIN_GRACE_S = 300.0
# A job queued or submitting this long since its last write may have lost its submit message.
QUIET_S = 30.0
# A job gets its entry once it has lived this long (before, the census finds it: ADR 0041).
SETTLE_S = 300.0
FOLLOWED = frozenset({JobState.RUNNING, JobState.CANCEL_REQUESTED, JobState.POSTPROCESSING})
_FORMAT = "%Y%m%d%H%M"


def look_at(job: Job) -> datetime:
    """When the reconciler must read the unfinished ``job`` at the latest (pure)."""
    if waiting(job):  # its upstreams' ends release it; the pass only enforces its deadline
        return job.updated_at if job.release_due else job.deadline_at
    if job.state in FOLLOWED:
        # No due time recorded: the chain is re-armed on every pass (a record from before it was kept).
        when = job.updated_at if job.poll_due_at is None else job.poll_due_at + timedelta(seconds=CHAIN_GRACE_S)
    else:
        when = job.updated_at + timedelta(seconds=QUIET_S)
    return min(when, job.deadline_at)


def waiting(job: Job) -> bool:
    """Whether ``job`` waits for jobs or groups (ADR 0040): stored queued, without a submit message."""
    return job.state is JobState.QUEUED and bool(job.waiting_for)


def settled(job: Job) -> bool:
    """Whether ``job`` has lived long enough to keep an entry (from its own fields: pure)."""
    reference = job.poll_due_at or job.updated_at
    return (reference - job.created_at).total_seconds() >= SETTLE_S


def bucket(when: datetime) -> str:
    """The name of the :data:`GRID_S` window holding ``when`` (UTC)."""
    seconds = int(when.astimezone(UTC).timestamp())
    return datetime.fromtimestamp(seconds - seconds % GRID_S, UTC).strftime(_FORMAT)


def entry_name(job: Job) -> str | None:
    """The entry ``job`` should have, or None (ended, or not settled yet)."""
    if job.state.terminal or not (settled(job) or waiting(job)):
        return None
    return f"{DUE}{bucket(look_at(job))}/{job.id}"


def ended_entry(job: Job) -> str | None:
    """The entry the write that ends ``job`` gives it, when its end has followers (None: it keeps its own).

    A job others wait for (``hasDependents``) or a group's item: its end releases dependents or marks
    its group (the journal's step 1a). The entry is due at once, so should the host die before that
    step, the next pass finds the ended job; retiring it (after the step) deletes the entry.
    """
    if job.has_dependents or job.group_id is not None:
        return f"{DUE}{bucket(job.updated_at)}/{job.id}"
    return None


def due_until(now: datetime) -> str:
    """Names up to this one (exclusive) are in buckets that have begun by ``now``."""
    return f"{DUE}{bucket(now)}0"  # "0" sorts after "/": the whole bucket of ``now`` is in


def job_of(name: str) -> str:
    return name.rpartition("/")[2]


def bucket_of(name: str) -> str:
    return name.removeprefix(DUE).partition("/")[0]
