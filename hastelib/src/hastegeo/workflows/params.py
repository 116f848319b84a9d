"""Typed readers for ``params.json`` values that fail with a message naming the parameter.

A workload's parameters come from a client request, so every value is
checked here and a wrong one becomes a :class:`WorkloadError` the pipeline
can show as is ("parameter 'bbox' must be ..."), never a ``KeyError`` or a
``TypeError`` deep in numpy. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hastegeo.workflows.runtime import ProgressLog, Workdir, WorkloadError

BBox = tuple[float, float, float, float]


def warn_unknown(params: Mapping[str, Any], known: Iterable[str], progress: ProgressLog) -> None:
    """Log parameters the workload does not read, so a typo is visible instead of silent.

    Not an error: the pipeline may add bookkeeping keys the workload ignores.
    """
    unknown = sorted(set(params) - set(known))
    if unknown:
        progress.step(f"ignoring unknown parameter(s): {', '.join(unknown)}")


def get_int(params: Mapping[str, Any], name: str, default: int, minimum: int, maximum: int) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise WorkloadError(f"parameter {name!r} must be an integer in [{minimum}, {maximum}], got {value!r}")
    return value


def get_float(params: Mapping[str, Any], name: str, default: float, minimum: float, maximum: float) -> float:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkloadError(f"parameter {name!r} must be a number, got {value!r}")
    if not minimum <= float(value) <= maximum:
        raise WorkloadError(f"parameter {name!r} must be in [{minimum}, {maximum}], got {value!r}")
    return float(value)


def get_str(params: Mapping[str, Any], name: str, default: str | None = None) -> str | None:
    value = params.get(name, default)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise WorkloadError(f"parameter {name!r} must be a non-empty string, got {value!r}")
    return value


def get_str_list(params: Mapping[str, Any], name: str) -> list[str] | None:
    """A list of non-empty strings (a single string is accepted as a one-item list); None if absent."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item.strip() for item in value):
        raise WorkloadError(f"parameter {name!r} must be a non-empty list of strings, got {value!r}")
    return [str(item) for item in value]


def get_classes(params: Mapping[str, Any], name: str = "classes") -> list[str]:
    classes = get_str_list(params, name)
    if classes is None or len(classes) < 2:
        raise WorkloadError(f"parameter {name!r} must list at least two class names")
    if len(set(classes)) != len(classes):
        raise WorkloadError(f"parameter {name!r} lists a class twice: {classes}")
    if len(classes) > 254:
        raise WorkloadError(f"parameter {name!r} lists {len(classes)} classes; at most 254 are supported")
    return classes


def get_bbox(params: Mapping[str, Any], name: str = "bbox") -> BBox | None:
    """``[minLon, minLat, maxLon, maxLat]`` in WGS84 degrees, or None when absent."""
    value = params.get(name)
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 4
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    ):
        raise WorkloadError(f"parameter {name!r} must be [minLon, minLat, maxLon, maxLat], got {value!r}")
    min_lon, min_lat, max_lon, max_lat = (float(v) for v in value)
    if not (-180 <= min_lon < max_lon <= 180 and -90 <= min_lat < max_lat <= 90):
        raise WorkloadError(
            f"parameter {name!r} must satisfy -180 <= minLon < maxLon <= 180 and -90 <= minLat < maxLat <= 90, "
            f"got {value!r}"
        )
    return (min_lon, min_lat, max_lon, max_lat)


def input_file(workdir: Workdir, name: str, what: str) -> Path:
    """A file under ``inputs/`` named by a parameter; refuses paths that escape inputs/."""
    root = workdir.inputs.resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root):
        raise WorkloadError(f"{what} {name!r} is outside inputs/")
    if not path.is_file():
        raise WorkloadError(f"{what} {name!r} was not found in inputs/")
    return path


RASTER_SUFFIXES = (".tif", ".tiff")


def default_raster(workdir: Workdir, params: Mapping[str, Any], name: str = "imagery") -> Path:
    """The raster a workload reads: the one the parameter names, else ``imagery.tif``, else the only raster.

    ``imagery.tif`` is what the imagery workload writes, so a chained job
    finds its input without naming it even when a preview sits next to it.
    """
    named = get_str(params, name)
    if named is not None:
        return input_file(workdir, named, "raster")
    rasters = sorted(p for p in workdir.inputs.rglob("*") if p.is_file() and p.suffix.lower() in RASTER_SUFFIXES)
    preferred = [p for p in rasters if p.name == "imagery.tif"]
    if len(preferred) == 1:
        return preferred[0]
    if len(rasters) == 1:
        return rasters[0]
    if not rasters:
        raise WorkloadError("no GeoTIFF found in inputs/")
    listed = ", ".join(p.relative_to(workdir.inputs).as_posix() for p in rasters)
    raise WorkloadError(f"several rasters in inputs/ ({listed}); name one with parameter {name!r}")


def default_vector(workdir: Workdir, params: Mapping[str, Any], name: str, fallback: str) -> Path:
    """The GeoJSON a parameter names, else ``fallback`` (e.g. ``labels.geojson``) anywhere under inputs/."""
    named = get_str(params, name)
    if named is not None:
        return input_file(workdir, named, name)
    matches = sorted(p for p in workdir.inputs.rglob(fallback) if p.is_file())
    if len(matches) != 1:
        found = "none" if not matches else f"{len(matches)} files"
        raise WorkloadError(f"parameter {name!r} not given and {fallback} not found once in inputs/ ({found})")
    return matches[0]
