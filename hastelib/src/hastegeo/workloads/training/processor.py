"""The training workload's processor: its spec before compute, then inference and packaging if asked for."""

from __future__ import annotations

from pydantic import Field

from hastegeo.compute.contract import Resources
from hastegeo.models.job import Job, JobInput, JobRequest
from hastegeo.workloads.geospatial import ChainingProcessor, package_outputs
from hastegeo.workloads.training.params import TrainingParams


class TrainingRequestParams(TrainingParams):
    """Training's parameters plus the keys the pipeline reads when the job succeeds."""

    run_inference: bool = Field(False, description="Start an inference job when training succeeds.")
    package_artifacts: bool = Field(True, description="Start an artifacts job when training succeeds.")


class TrainingProcessor(ChainingProcessor):
    workload = "training"
    params_model = TrainingRequestParams
    resources = Resources(cpu=2, memory_gb=8)

    def follow_ons(self, job: Job) -> list[JobRequest]:
        requests = []
        if job.parameters.get("runInference"):
            # The model comes from this job; imagery and footprints from this job's own inputs.
            inputs = [JobInput(job_id=job.id, dest="model"), *job.inputs]
            requests.append(
                JobRequest(workload="inference", project_id=job.project_id, inputs=inputs, labels=job.labels)
            )
        return requests + package_outputs(job)
