"""A job's runs as its backend reports them, kept on the job in writes the pipeline makes anyway (docs/adr/0038).

The poll step keeps what a status tells (:func:`told`) in its writes; it writes for it only when the
report changes which runs are known or whether one has ended (:func:`news`), which happens with a
change of the status's note anyway (the first poll that sees the job run, a preemption). The job's cost
is priced from them by the write that ends it (:class:`hastegeo.pipeline.journal.JobJournal`).
"""

from __future__ import annotations

from hastegeo.compute.contract import ComputeStatus
from hastegeo.costs.usage import JobUsage
from hastegeo.models.job import Job


def told(job: Job, status: ComputeStatus) -> Job:
    """``job`` with the runs ``status`` reports on its backend (unchanged when it reports none)."""
    if status.usage is None:
        return job
    usage = (job.usage or JobUsage()).told(job.backend, status.usage)
    return job if usage == job.usage else job.model_copy(update={"usage": usage})


def news(before: Job, after: Job) -> bool:
    """Whether ``after`` knows of a run, an end or a count that ``before`` did not (worth a write)."""
    if after.usage is None:
        return False
    return before.usage is None or before.usage.shape() != after.usage.shape()
