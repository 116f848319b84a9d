"""Processors of the geospatial workloads: parameters checked at the API, summaries and follow-ons after.

The parameter models mirror ``docs/workloads.md``; they reject unknown keys
so a typo is a 400 naming ``parameters.<key>`` rather than a silently
ignored setting on compute. Keys the pipeline itself reads (``runInference``)
are removed before the parameters travel to the workload.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from hastegeo.compute.contract import BlobLocation, ComputeJobSpec, Resources
from hastegeo.models.job import Job, JobInput, JobRequest, check_relative_path
from hastegeo.models.ownership import InputName, InputNameOrUrl
from hastegeo.processors.base import Params, Processor, SpecInputs
from hastegeo.utils.errors import InvalidJobError


def _relative(value: str | None) -> str | None:
    return None if value is None else check_relative_path(value)


class ImageryParams(Params):
    sources: list[InputNameOrUrl] | None = Field(None, max_length=100, description="Files under inputs/ or https URLs.")
    bbox: tuple[float, float, float, float] | None = Field(None, description="[minLon, minLat, maxLon, maxLat]")
    rgb_bands: tuple[int, int, int] | None = None
    preview_max_size: int = Field(1024, ge=16, le=8192)
    allowed_hosts: list[str] | None = Field(None, description="Narrows the operator's https allowlist.")
    max_download_bytes: int | None = Field(None, gt=0)

    @field_validator("sources")
    @classmethod
    def _sources(cls, value: list[str] | None) -> list[str] | None:
        for source in value or []:
            if not source.startswith("https://"):
                check_relative_path(source)
        return value

    @field_validator("bbox")
    @classmethod
    def _bbox(cls, value: tuple[float, float, float, float] | None) -> tuple[float, float, float, float] | None:
        if value is not None:
            west, south, east, north = value
            if not (-180 <= west < east <= 180 and -90 <= south < north <= 90):
                raise ValueError("must be [minLon, minLat, maxLon, maxLat] with min < max, in WGS84 degrees")
        return value


class TrainingParams(Params):
    classes: list[str] = Field(min_length=2, max_length=255)
    imagery: InputName | None = None
    labels: InputName | None = None
    class_property: str = "class"
    seed: int = Field(0, ge=0)
    validation_fraction: float = Field(0.25, gt=0, lt=1)
    iterations: int = Field(300, ge=1, le=100_000)
    learning_rate: float = Field(0.5, gt=0)
    l2: float = Field(0.0001, ge=0)
    max_samples_per_class: int = Field(50_000, ge=10)
    run_inference: bool = Field(False, description="Start an inference job when training succeeds.")

    package_artifacts: bool = Field(True, description="Start an artifacts job when training succeeds.")

    @field_validator("imagery", "labels")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return _relative(value)

    @field_validator("classes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("class names must be unique")
        return value


class InferenceParams(Params):
    model: InputName | None = None
    imagery: InputName | None = None
    buildings: InputName | None = None

    package_artifacts: bool = Field(True, description="Start an artifacts job when inference succeeds.")

    @field_validator("model", "imagery", "buildings")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return _relative(value)


class EmbeddingParams(Params):
    imagery: InputName | None = None
    buildings: InputName | None = None
    dimensions: int = Field(32, ge=1, le=1024)
    kernel_size: int = Field(3, ge=1, le=15)
    seed: int = Field(0, ge=0)

    @field_validator("imagery", "buildings")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return _relative(value)

    @field_validator("kernel_size")
    @classmethod
    def _odd(cls, value: int) -> int:
        if value % 2 == 0:
            raise ValueError("must be odd")
        return value


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
    params_model = TrainingParams
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
    params_model = InferenceParams
    resources = Resources(cpu=2, memory_gb=4)

    def follow_ons(self, job: Job) -> list[JobRequest]:
        return _package(job)


class EmbeddingProcessor(_GeoProcessor):
    workload = "embedding"
    params_model = EmbeddingParams
    resources = Resources(cpu=2, memory_gb=4)
