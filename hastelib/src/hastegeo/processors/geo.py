"""Processors of the geospatial workloads: parameters checked at the API, summaries and follow-ons after.

The parameter models are the workloads' own (:mod:`hastegeo.models.params`,
also what compute validates with); they reject unknown keys so a typo is a
400 naming ``parameters.<key>`` rather than a silently ignored setting on
compute. Keys the pipeline itself reads (``runInference``,
``packageArtifacts``) are added by the request models here and removed
before the parameters travel to the workload.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, Resources
from hastegeo.models.job import Job, JobInput, JobRequest
from hastegeo.models.params import EmbeddingParams, ImageryParams, InferenceParams, TrainingParams
from hastegeo.processors.base import Processor, SpecInputs
from hastegeo.utils.errors import InvalidJobError


class TrainingRequestParams(TrainingParams):
    """Training's parameters plus the keys the pipeline reads when the job succeeds."""

    run_inference: bool = Field(False, description="Start an inference job when training succeeds.")
    package_artifacts: bool = Field(True, description="Start an artifacts job when training succeeds.")


class InferenceRequestParams(InferenceParams):
    """Inference's parameters plus the key the pipeline reads when the job succeeds."""

    package_artifacts: bool = Field(True, description="Start an artifacts job when inference succeeds.")


class _GeoProcessor(Processor):
    """Shared: geospatial work needs at least one input, and the summary comes from the manifest."""

    def validate(self, request: JobRequest) -> None:
        super().validate(request)
        if not request.inputs and not request.parameters.get("sources"):
            raise InvalidJobError(f"inputs: the {self.workload} workload needs at least one input", field="inputs")

    def summarize(self, manifest: dict[str, Any]) -> dict[str, Any]:
        summary = manifest.get("summary")
        return dict(summary) if isinstance(summary, dict) else {}


class ImageryProcessor(_GeoProcessor):
    workload = "imagery"
    params_model = ImageryParams
    resources = Resources(cpu=2, memory_gb=4)


# Keys the pipeline reads itself; they never travel to the workload.
PIPELINE_KEYS = frozenset({"runInference", "packageArtifacts"})


def _package(job: Job) -> list[JobRequest]:
    """An artifacts job over this job's outputs, unless the request opted out."""
    if job.parameters.get("packageArtifacts", True) is False:
        return []
    return [
        JobRequest(workload="artifacts", project_id=job.project_id, inputs=[JobInput(job_id=job.id)], labels=job.labels)
    ]


class _ChainingProcessor(_GeoProcessor):
    def build_spec(self, job: Job, where: SpecInputs, output: BlobLocation) -> ComputeJobSpec:
        workload_params = {k: v for k, v in job.parameters.items() if k not in PIPELINE_KEYS}
        return super().build_spec(job.model_copy(update={"parameters": workload_params}), where, output)


class TrainingProcessor(_ChainingProcessor):
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
        return requests + _package(job)


class InferenceProcessor(_ChainingProcessor):
    workload = "inference"
    params_model = InferenceRequestParams
    resources = Resources(cpu=2, memory_gb=4)

    def follow_ons(self, job: Job) -> list[JobRequest]:
        return _package(job)


class EmbeddingProcessor(_GeoProcessor):
    workload = "embedding"
    params_model = EmbeddingParams
    resources = Resources(cpu=2, memory_gb=4)
