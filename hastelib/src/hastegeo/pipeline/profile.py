"""The compute profile a stored job runs under, as its backend's settings declare it now (ADR 0043).

The API checked the profile when it accepted the job; the settings may have
changed since (a deployment between acceptance and submission), so the submit
step looks it up again and fails the job with a readable cause rather than run
it somewhere else.
"""

from __future__ import annotations

from hastegeo.compute.contract import ComputeJobSpec
from hastegeo.models.job import Job
from hastegeo.profiles import DEFAULT_PROFILE, Profile
from hastegeo.settings.app import Settings
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads.registry import workload_names


def job_profile(settings: Settings, job: Job) -> Profile:
    """The profile ``job`` runs under on its backend.

    Raises:
        InvalidJobError: (``field="profile"``) the backend no longer offers it to the job's workload.
    """
    offered = settings.backend(job.backend).profiles(workload_names())
    profile = offered.get(job.profile)
    if profile is None or (job.profile != DEFAULT_PROFILE and job.workload not in profile.workloads):
        raise InvalidJobError(
            f"profile: {job.backend} no longer offers {job.profile!r} to {job.workload!r} workloads",
            field="profile",
        )
    return profile


def with_profile(spec: ComputeJobSpec, profile: Profile) -> ComputeJobSpec:
    """``spec`` under ``profile``: a declared one names itself to the adapter and sets the run's time limit."""
    if profile.name == DEFAULT_PROFILE:
        return spec
    return spec.model_copy(update={"profile": profile.name, "time_limit_s": profile.time_limit_s(spec.time_limit_s)})
