"""A workload's parameters, validated on compute by the same model the API validated them with.

The model (:mod:`hastegeo.models.params`) holds each parameter's type,
bounds and default, so the API and the workload cannot disagree about what
runs. A value that fails here (a hand-written ``params.json``, a job
submitted around the API) becomes a :class:`WorkloadError` naming the
parameter, never a ``KeyError`` or a ``TypeError`` deep in numpy. Also the
helpers that turn parameter values into files under ``inputs/``. Standard
library and pydantic only: no geospatial import.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from hastegeo.models.params import Params, first_error, known_keys
from hastegeo.workloads._run.harness import ProgressLog, Workdir, WorkloadError, iter_files

ParamsT = TypeVar("ParamsT", bound=Params)


def warn_unknown(params: Mapping[str, Any], known: Iterable[str], progress: ProgressLog) -> None:
    """Log parameters the workload does not read, so a typo is visible instead of silent.

    Not an error: the pipeline may add bookkeeping keys the workload ignores.
    """
    unknown = sorted(set(params) - set(known))
    if unknown:
        progress.step(f"ignoring unknown parameter(s): {', '.join(unknown)}")


def read_params(model: type[ParamsT], params: Mapping[str, Any], progress: ProgressLog) -> ParamsT:
    """``params`` validated by ``model``; unknown keys are logged and ignored (see :func:`warn_unknown`).

    Raises:
        WorkloadError: naming the first parameter that is wrong and why.
    """
    known = known_keys(model)
    warn_unknown(params, known, progress)
    try:
        return model.model_validate({key: value for key, value in params.items() if key in known})
    except ValidationError as exc:
        path, message = first_error(exc)
        raise WorkloadError(f"parameter {path!r}: {message}") from None


def input_file(workdir: Workdir, name: str, what: str) -> Path:
    """A file under ``inputs/`` named by a parameter; refuses paths that escape inputs/."""
    # Lexical, not resolved: on Azure ML every staged input is a link to its mount, outside inputs/.
    root = Path(os.path.abspath(workdir.inputs))
    path = Path(os.path.normpath(root / name))
    if not path.is_relative_to(root):
        raise WorkloadError(f"{what} {name!r} is outside inputs/")
    if not path.is_file():
        raise WorkloadError(f"{what} {name!r} was not found in inputs/")
    return path


RASTER_SUFFIXES = (".tif", ".tiff")


def default_raster(workdir: Workdir, named: str | None, name: str = "imagery") -> Path:
    """The raster a workload reads: ``named`` (parameter ``name``), else ``imagery.tif``, else the only raster.

    ``imagery.tif`` is what the imagery workload writes, so a chained job
    finds its input without naming it even when a preview sits next to it.
    """
    if named is not None:
        return input_file(workdir, named, "raster")
    rasters = [p for p in iter_files(workdir.inputs) if p.suffix.lower() in RASTER_SUFFIXES]
    preferred = [p for p in rasters if p.name == "imagery.tif"]
    if len(preferred) == 1:
        return preferred[0]
    if len(rasters) == 1:
        return rasters[0]
    if not rasters:
        raise WorkloadError("no GeoTIFF found in inputs/")
    listed = ", ".join(p.relative_to(workdir.inputs).as_posix() for p in rasters)
    raise WorkloadError(f"several rasters in inputs/ ({listed}); name one with parameter {name!r}")


def default_vector(workdir: Workdir, named: str | None, name: str, fallback: str) -> Path:
    """``named`` (the value of parameter ``name``), else ``fallback`` (e.g. ``labels.geojson``) under inputs/."""
    if named is not None:
        return input_file(workdir, named, name)
    matches = [p for p in iter_files(workdir.inputs) if p.name == fallback]
    if len(matches) != 1:
        found = "none" if not matches else f"{len(matches)} files"
        raise WorkloadError(f"parameter {name!r} not given and {fallback} not found once in inputs/ ({found})")
    return matches[0]
