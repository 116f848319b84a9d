"""The artifacts workload's processor: the zip it wrote checked against its manifest."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from hastegeo.models.job import Job, JobRequest
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads.artifacts.params import ArtifactsParams
from hastegeo.workloads.processor import OutputAccess, PostprocessError, Processor


class ArtifactsProcessor(Processor):
    workload = "artifacts"
    params_model = ArtifactsParams

    def validate(self, request: JobRequest) -> None:
        super().validate(request)
        if not request.inputs:
            raise InvalidJobError("inputs: the artifacts workload needs at least one input", field="inputs")

    def check(self, job: Job, manifest: dict[str, Any], access: OutputAccess) -> None:
        archived = manifest.get("archived")
        if not isinstance(archived, list):
            raise PostprocessError("artifacts manifest does not list the archived files")
        data = access.read_blob("outputs/artifacts.zip")
        if data is None:
            raise PostprocessError("outputs/artifacts.zip is missing")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                entries = {info.filename: info.file_size for info in archive.infolist() if not info.is_dir()}
        except zipfile.BadZipFile:
            raise PostprocessError("outputs/artifacts.zip is not a valid zip file") from None
        expected = {item["name"]: item["size"] for item in archived}
        if entries != expected:
            missing = sorted(set(expected) - set(entries))
            extra = sorted(set(entries) - set(expected))
            raise PostprocessError(
                f"artifacts.zip does not match its manifest (missing {missing[:5]}, unexpected {extra[:5]})"
            )

    def summarize(self, manifest: dict[str, Any]) -> dict[str, Any]:
        archived = manifest.get("archived") or []
        return {"files": len(archived), "bytes": sum(int(item.get("size", 0)) for item in archived)}
