"""The imagery workload's parameters: what the API validates and the workload reads on compute."""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator

from hastegeo.models.params import Band, Host, Params, Source


class ImageryParams(Params):
    sources: list[Source] | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="Files under inputs/ and/or https URLs; default: every GeoTIFF in inputs/.",
    )
    bbox: list[float] | None = Field(
        None, min_length=4, max_length=4, description="[minLon, minLat, maxLon, maxLat] in WGS84 degrees."
    )
    rgb_bands: list[Band] | None = Field(
        None,
        min_length=3,
        max_length=3,
        description="Three 1-based band numbers for the preview (each at most the raster's band count); "
        "default [1, 2, 3], or [1, 1, 1] for fewer bands.",
    )
    preview_max_size: int = Field(1024, ge=16, le=8192, description="Longest side of the preview, in pixels.")
    allowed_hosts: list[Host] | None = Field(
        None, min_length=1, max_length=100, description="Narrows the operator's https allowlist (cannot widen it)."
    )
    max_download_bytes: int | None = Field(
        None, ge=1, le=2**62, description="Lowers the operator's download size cap per source."
    )

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"bbox": [14.99, 45.1, 15.01, 45.12], "rgbBands": [3, 2, 1]}]}
    )

    @field_validator("bbox")
    @classmethod
    def _bbox(cls, value: list[float] | None) -> list[float] | None:
        if value is not None:
            west, south, east, north = value
            if not (-180 <= west < east <= 180 and -90 <= south < north <= 90):
                raise ValueError("must be [minLon, minLat, maxLon, maxLat] with min < max, in WGS84 degrees")
        return value
