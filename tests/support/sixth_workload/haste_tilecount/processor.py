"""The tilecount workload's processor: an input is required; the count is checked and shown after."""

from __future__ import annotations

import json
from typing import Any

from hastegeo.models.job import Job, JobRequest
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads.processor import OutputAccess, PostprocessError, Processor

from .params import TilecountParams


class TilecountProcessor(Processor):
    workload = "tilecount"
    params_model = TilecountParams

    def validate(self, request: JobRequest) -> None:
        super().validate(request)
        if not request.inputs:
            raise InvalidJobError("inputs: the tilecount workload needs at least one input", field="inputs")

    def check(self, job: Job, manifest: dict[str, Any], access: OutputAccess) -> None:
        data = access.read_blob("outputs/count.json")
        if data is None or json.loads(data) != manifest.get("summary"):
            raise PostprocessError("outputs/count.json does not match the manifest's summary")

    def summarize(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return dict(manifest.get("summary") or {})
