"""The embedding workload's parameters: what the API validates and the workload reads on compute."""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator

from hastegeo.models.params import InputName, Params, Seed


class EmbeddingParams(Params):
    imagery: InputName | None = Field(None, description="Raster (default imagery.tif, else the only one).")
    buildings: InputName | None = Field(None, description="Footprints GeoJSON (default buildings.geojson).")
    dimensions: int = Field(32, ge=1, le=1024, description="Number of random filters (vector length).")
    kernel_size: int = Field(3, ge=1, le=15, description="Odd filter size in pixels.")
    seed: Seed = 0

    model_config = ConfigDict(json_schema_extra={"examples": [{"dimensions": 64, "kernelSize": 5, "seed": 1}]})

    @field_validator("kernel_size")
    @classmethod
    def _odd(cls, value: int) -> int:
        if value % 2 == 0:
            raise ValueError("must be odd")
        return value
