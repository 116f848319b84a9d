"""What the geospatial workloads' processors share: an input is required, the summary comes from the manifest,
and the keys only the pipeline reads never travel to compute.

The parameter models are the workloads' own (each folder's ``params.py``, also
what compute validates with); they reject unknown keys so a typo is a 400 naming
``parameters.<key>`` rather than a silently ignored setting on compute. Keys the
pipeline itself reads (``runInference``, ``packageArtifacts``) are added by the
request models of training and inference and removed before the parameters
travel to the workload.
"""

from __future__ import annotations

from typing import Any

from hastegeo.compute.contract import BlobLocation, ComputeJobSpec
from hastegeo.models.job import Job, JobInput, JobRequest
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads.processor import Processor, SpecInputs

# Keys the pipeline reads itself; they never travel to the workload.
PIPELINE_KEYS = frozenset({"runInference", "packageArtifacts"})


class GeoProcessor(Processor):
    """Shared: geospatial work needs at least one input, and the summary comes from the manifest."""

    def validate(self, request: JobRequest) -> None:
        super().validate(request)
        if not request.inputs and not request.parameters.get("sources"):
            raise InvalidJobError(f"inputs: the {self.workload} workload needs at least one input", field="inputs")

    def summarize(self, manifest: dict[str, Any]) -> dict[str, Any]:
        summary = manifest.get("summary")
        return dict(summary) if isinstance(summary, dict) else {}


def package_outputs(job: Job) -> list[JobRequest]:
    """An artifacts job over this job's outputs, unless the request opted out."""
    if job.parameters.get("packageArtifacts", True) is False:
        return []
    return [
        JobRequest(workload="artifacts", project_id=job.project_id, inputs=[JobInput(job_id=job.id)], labels=job.labels)
    ]


class ChainingProcessor(GeoProcessor):
    """A workload whose success may start others: its pipeline keys stay behind when its spec is built."""

    def build_spec(self, job: Job, where: SpecInputs, output: BlobLocation) -> ComputeJobSpec:
        workload_params = {k: v for k, v in job.parameters.items() if k not in PIPELINE_KEYS}
        return super().build_spec(job.model_copy(update={"parameters": workload_params}), where, output)
