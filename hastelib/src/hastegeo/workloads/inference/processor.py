"""The inference workload's processor: its spec before compute, then packaging unless opted out."""

from __future__ import annotations

from pydantic import Field

from hastegeo.compute.contract import Resources
from hastegeo.models.job import Job, JobRequest
from hastegeo.workloads.geospatial import ChainingProcessor, package_outputs
from hastegeo.workloads.inference.params import InferenceParams


class InferenceRequestParams(InferenceParams):
    """Inference's parameters plus the key the pipeline reads when the job succeeds."""

    package_artifacts: bool = Field(True, description="Start an artifacts job when inference succeeds.")


class InferenceProcessor(ChainingProcessor):
    workload = "inference"
    params_model = InferenceRequestParams
    resources = Resources(cpu=2, memory_gb=4)

    def follow_ons(self, job: Job) -> list[JobRequest]:
        return package_outputs(job)
