"""Each workload's parameters, defined once: the API validates with them, OpenAPI documents them, compute reads them.

There used to be two definitions (pydantic models at the API, hand-written
readers on compute) and they drifted: the API accepted a seed, a learning
rate or band numbers that the workload then refused with exit code 2. Now
one model per workload holds the types, bounds and defaults, and both sides
validate with it, so what the API accepts the workload runs.

- **Strict**: no coercion. ``"6"`` or ``true`` is not an integer, a bool is
  not a number, floats must be finite, lists must be JSON arrays.
- **Bounds are what the workload can run**: seeds fit NumPy's 32-bit seed
  range as the manifests report it, training's rates and fractions are the
  ranges its gradient descent and split are tested with, at most 254
  classes because class index 255 is nodata in the class raster.
- Facts only compute knows (the raster's band count for ``rgbBands``, the
  files under ``inputs/``) are checked there, after these models.

Keys the pipeline reads itself (``runInference``, ``packageArtifacts``) are
not here: they belong to the processors' request models and never reach a
workload.

Light on purpose (pydantic and the standard library): the workload launcher
imports this module for every job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from hastegeo.models.paths import check_relative_path

SEED_MAX = 2**32 - 1
# GeoTIFF stores the band count in 16 bits; the raster's real count is checked on compute.
BAND_MAX = 65_535
MAX_CLASSES = 254
NAME_MAX = 1024
URL_MAX = 2048
# Whitespace and control characters: never part of a URL or a host name.
_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class InputRef:
    """Marks a parameter whose value names a file under ``inputs/`` (``urls``: an https URL also may).

    Project isolation (``models/ownership.py``) finds these parameters by this mark, so a new
    file-naming parameter is held to the job's inputs without a list to keep.
    """

    urls: bool = False


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _text(value: str) -> str:
    if _CONTROL.search(_not_blank(value)):
        raise ValueError("must not contain control characters")
    return value


def _input_name(value: str) -> str:
    return check_relative_path(_not_blank(value))


def _source(value: str) -> str:
    if "://" in value:
        if not value.startswith("https://") or _FORBIDDEN.search(value) or len(value) <= len("https://"):
            raise ValueError("only https URLs are fetched, without spaces or control characters")
        return value
    return _input_name(value)


def _host(value: str) -> str:
    if _FORBIDDEN.search(value) or "," in value:
        raise ValueError("must be one host name (or '*.domain') without spaces, commas or control characters")
    return value


InputName = Annotated[
    str,
    Field(min_length=1, max_length=NAME_MAX, description="A path under inputs/ (no '..', '.', '//', leading '/')."),
    AfterValidator(_input_name),
    InputRef(),
]
Text = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_text)]
Source = Annotated[str, Field(min_length=1, max_length=URL_MAX), AfterValidator(_source), InputRef(urls=True)]
Host = Annotated[str, Field(min_length=1, max_length=253), AfterValidator(_host)]
Band = Annotated[int, Field(ge=1, le=BAND_MAX)]
Seed = Annotated[int, Field(ge=0, le=SEED_MAX, description="Seed of the random generator (unsigned 32-bit).")]


class Params(BaseModel):
    """Base of each workload's parameters: camelCase only, strict types, finite floats, unknown keys rejected.

    Only the camelCase spelling is accepted: with two spellings, a pipeline
    key sent as ``run_inference`` would slip past the code that reads and
    strips ``runInference``.
    """

    # defer_build: a workload builds only its own validator, not all five, when it starts.
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, strict=True, allow_inf_nan=False, defer_build=True
    )


def known_keys(model: type[Params]) -> frozenset[str]:
    """The keys ``model`` reads, as clients spell them (``rgbBands``)."""
    return frozenset(field.alias or name for name, field in model.model_fields.items())


def field_path(loc: tuple[int | str, ...]) -> str:
    """``("inputs", 0, "blob")`` -> ``inputs[0].blob``: how every 400 and workload error names a field."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def first_error(exc: ValidationError) -> tuple[str, str]:
    """The path (``rgbBands[0]``) and a readable message of the first problem, without the input value.

    Both sides word their errors with this, so the API's 400 and the
    workload's last log line say the same thing.
    """
    error = exc.errors(include_url=False, include_input=False, include_context=False)[0]
    path = field_path(error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return path, message


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


class TrainingParams(Params):
    classes: list[Text] = Field(
        min_length=2,
        max_length=MAX_CLASSES,
        description="Class names, unique; their order is the model's class index.",
    )
    imagery: InputName | None = Field(None, description="Raster to sample (default imagery.tif, else the only one).")
    labels: InputName | None = Field(None, description="GeoJSON of labelled polygons (default labels.geojson).")
    class_property: Text = Field("class", description="Property holding each polygon's class.")
    seed: Seed = 0
    validation_fraction: float = Field(0.25, ge=0.05, le=0.9, description="Share of each class held out.")
    iterations: int = Field(300, ge=1, le=100_000, description="Gradient-descent steps.")
    learning_rate: float = Field(0.5, ge=1e-6, le=10.0, description="Step size.")
    l2: float = Field(0.0001, ge=0.0, le=10.0, description="Weight decay.")
    max_samples_per_class: int = Field(
        50_000, ge=10, le=10_000_000, description="Pixels drawn at most per polygon and per class."
    )

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"classes": ["water", "vegetation", "bare", "building"], "seed": 7}]}
    )

    @field_validator("classes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("class names must be unique")
        return value


class InferenceParams(Params):
    model: InputName | None = Field(None, description="Model file under inputs/ (default model.json).")
    imagery: InputName | None = Field(None, description="Raster to classify (default imagery.tif, else the only one).")
    buildings: InputName | None = Field(None, description="Footprints GeoJSON (default buildings.geojson if present).")

    model_config = ConfigDict(json_schema_extra={"examples": [{"model": "model/model.json"}]})


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


class ArtifactsParams(Params):
    compress_level: int = Field(6, ge=0, le=9, description="zlib level; 0 stores without compression.")

    model_config = ConfigDict(json_schema_extra={"examples": [{"compressLevel": 9}]})


WORKLOAD_PARAMS: dict[str, type[Params]] = {
    "imagery": ImageryParams,
    "training": TrainingParams,
    "inference": InferenceParams,
    "embedding": EmbeddingParams,
    "artifacts": ArtifactsParams,
}
