"""Where a job's checkpoints go, which other job's it may start from, and how often they are copied: the spec's
checkpoint variables.

Backend-neutral: every backend passes the spec's env to the workload. A rerun names the job it
resumes (``Job.resume_from``); that job must be of the same project, checked here against the
stored record whatever wrote the job document, so a checkpoint never crosses projects. The interval
is the operator's (``HASTE_CHECKPOINT_INTERVAL_S`` app setting): the agent reads it from the job's
environment, not the app's, so the pipeline has to put it there for every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hastegeo.checkpoints.layout import BLOB_VARIABLE, INTERVAL_VARIABLE, RESUME_VARIABLE, location
from hastegeo.models.paths import job_prefix
from hastegeo.utils.errors import InvalidJobError

if TYPE_CHECKING:
    from hastegeo.compute.contract import BlobLocation
    from hastegeo.models.job import Job


def checkpoint_env(
    job: Job, output: BlobLocation, project_of: Callable[[str], str | None], *, interval_s: float
) -> dict[str, str]:
    """This job's checkpoint location (under ``output``, its own), the seconds between its periodic copies, and
    the location of the job it resumes from, if any (in the same container; ``project_of`` reads a job's project
    from the stored record).

    Raises:
        InvalidJobError: ``resume_from`` names a job of another project, or none at all.
    """
    env = {BLOB_VARIABLE: location(output.container, output.path), INTERVAL_VARIABLE: repr(float(interval_s))}
    if job.resume_from:
        if project_of(job.resume_from) != job.project_id:
            raise InvalidJobError(
                f"resumeFrom: job {job.resume_from} is not a job of project {job.project_id}", field="resumeFrom"
            )
        env[RESUME_VARIABLE] = location(output.container, job_prefix(job.resume_from))
    return env
