"""The building blocks of every workload's parameters: the base model, the shared types, the error wording.

Each workload's own model lives in its folder (``hastegeo.workloads.<name>.params``,
docs/adr/0037): the API validates with it, OpenAPI documents it, compute reads
``params.json`` with it. There used to be two definitions (pydantic models at the
API, hand-written readers on compute) and they drifted; now one model per
workload holds the types, bounds and defaults, built from these blocks:

- **Strict**: no coercion. ``"6"`` or ``true`` is not an integer, a bool is
  not a number, floats must be finite, lists must be JSON arrays.
- **Bounds are what the workload can run**: seeds fit NumPy's 32-bit seed
  range as the manifests report it, at most 254 classes because class index
  255 is nodata in the class raster.
- Facts only compute knows (the raster's band count for ``rgbBands``, the
  files under ``inputs/``) are checked there, after the models.

Keys the pipeline reads itself (``runInference``, ``packageArtifacts``) are
not in a workload's model: they belong to its processor's request model and
never reach the workload.

Light on purpose (pydantic and the standard library): the code that runs on
compute imports this module for every job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

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


def member_error(member: str, message: str) -> PydanticCustomError:
    """What a field's validator raises about one member of its value (``[2]``, ``.name``): the path of the
    error then names that member (``after[2]``), not the whole field with the member named in words."""
    return PydanticCustomError("member", "{message}", {"member": member, "message": message})


def error_pairs(exc: ValidationError) -> list[tuple[str, str]]:
    """Each problem of ``exc`` as (path, readable message), without the input value.

    The path is ``inputs[0].blob``, down to the member a validator named (:func:`member_error`); the
    message has no "Value error, " prefix, and an extra member is an "unknown field".
    """
    pairs = []
    for error in exc.errors(include_url=False, include_input=False):
        path = field_path(error["loc"]) + str((error.get("ctx") or {}).get("member", ""))
        message = "unknown field" if error["type"] == "extra_forbidden" else str(error["msg"])
        pairs.append((path, message.removeprefix("Value error, ")))
    return pairs


def first_error(exc: ValidationError) -> tuple[str, str]:
    """The path (``rgbBands[0]``) and a readable message of the first problem, without the input value.

    Both sides word their errors with this, so the API's 400 and the
    workload's last log line say the same thing.
    """
    return error_pairs(exc)[0]
