"""The artifacts workload's parameters: what the API validates and the workload reads on compute."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from hastegeo.models.params import Params


class ArtifactsParams(Params):
    compress_level: int = Field(6, ge=0, le=9, description="zlib level; 0 stores without compression.")

    model_config = ConfigDict(json_schema_extra={"examples": [{"compressLevel": 9}]})
