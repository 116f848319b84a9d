"""How inputs are owned: everything a job reads lies inside its own project (docs/adr/0008).

A job of project ``p1`` reads three kinds of things, and each is confined by construction:

- **a blob** of the inputs container. Requests keep naming it ``p1/scene/x.tif`` (the public
  format), but only the part after the project prefix is kept as meaningful: the staged source is
  rebuilt as ``<job's project>/`` + that relative name, so a spec cannot point outside the project;
  a name that does not start with the prefix is refused.
- **the outputs of an earlier job** (``jobId``), only when that job belongs to the same project. A
  job of another project is reported exactly like a missing one, so its existence does not leak.
- **a file named by a parameter** (``imagery``, ``labels``, ``model``, ``buildings``, ``sources``):
  a name under the job's ``inputs/`` folder, which holds only what the two kinds above staged.
  Parameters never name blobs; at acceptance such a name must be one the inputs stage.

Acceptance and the submit step call the same :func:`staged_inputs`, so the rule that admits a
request is the rule that builds its spec, whatever wrote the job document (defence in depth for
documents written by older versions). Everything here is pure: the one lookup, which project a job
id belongs to, comes in as a function.

Errors:
    InvalidJobError: ``field`` is the path of the offending value (``inputs[0].blob``).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from hastegeo.compute.contract import BlobLocation, InputFile
from hastegeo.models.job import JobInput
from hastegeo.models.params import InputRef
from hastegeo.models.paths import check_relative_path
from hastegeo.utils.errors import InvalidJobError

# The project a job id belongs to, or None when there is no such job.
ProjectOf = Callable[[str], str | None]


# The fields of JobInput that say where bytes come from; ``dest`` only says where they go.
SOURCE_FIELDS: frozenset[str] = frozenset({"blob", "job_id"})


def project_prefix(project_id: str) -> str:
    """The folder of ``project_id`` in the inputs container."""
    return f"{project_id}/"


def relative_blob(project_id: str, blob: str, field: str) -> str:
    """The name of ``blob`` inside the project: ``p1/scene/x.tif`` → ``scene/x.tif`` for ``p1``.

    Raises:
        InvalidJobError: the name is not under ``<project_id>/`` (or is not a safe relative path).
    """
    prefix = project_prefix(project_id)
    try:
        check_relative_path(blob)
    except ValueError as exc:
        raise InvalidJobError(f"{field}: {exc}", field=field) from None
    relative = blob[len(prefix) :] if blob.startswith(prefix) else ""
    if not relative.strip("/"):
        raise InvalidJobError(
            f"{field}: must name a blob under this project's folder {prefix!r} in the inputs container", field=field
        )
    return relative


def staged_name(item: JobInput) -> str:
    """The name under ``inputs/`` an input is staged as (a folder for a job's outputs)."""
    if item.dest:
        return item.dest
    if item.blob is not None:
        return item.blob.rsplit("/", 1)[-1]
    return item.job_id or ""


def staged_inputs(
    project_id: str,
    inputs: Iterable[JobInput],
    *,
    inputs_container: str,
    outputs_container: str,
    project_of: ProjectOf,
) -> list[InputFile]:
    """What to stage for a job of ``project_id``, every source inside the project.

    Blob sources are rebuilt as the project prefix plus the relative name; a job's outputs are
    staged only when ``project_of`` says that job belongs to the project.

    Raises:
        InvalidJobError: at the first input outside the project (``inputs[i].blob`` / ``inputs[i].jobId``).
    """
    staged = []
    for index, item in enumerate(inputs):
        if item.blob is not None:
            field = f"inputs[{index}].blob"
            path = project_prefix(project_id) + relative_blob(project_id, item.blob, field)
            source = BlobLocation(container=inputs_container, path=path)
            staged.append(InputFile(source=source, dest=staged_name(item)))
        elif item.job_id is not None:
            field = f"inputs[{index}].jobId"
            if project_of(item.job_id) != project_id:
                raise InvalidJobError(f"{field}: no job {item.job_id!r} in this project", field=field)
            source = BlobLocation(container=outputs_container, path=f"jobs/{item.job_id}/outputs")
            staged.append(InputFile(source=source, dest=staged_name(item), is_prefix=True))
        else:
            raise InvalidJobError(f"inputs[{index}]: names no source", field=f"inputs[{index}]")
    return staged


# --------------------------------------------------------------------------- parameters naming inputs


@dataclass(frozen=True)
class ParameterRef:
    """A parameter of a workload that names files under ``inputs/``."""

    name: str  # the attribute on the parameters model
    alias: str  # the camelCase key clients send
    many: bool  # a list of names
    urls: bool  # an https URL is allowed instead of a name


def parameter_refs(model: type[BaseModel]) -> list[ParameterRef]:
    """The parameters of ``model`` that name input files, found from their :class:`InputRef` annotation."""
    refs = []
    for name, info in model.model_fields.items():
        # pydantic moves a top-level Annotated's metadata to ``info.metadata``; nested ones stay in the annotation.
        marks = [item for item in info.metadata if isinstance(item, InputRef)]
        found = (marks[0], False) if marks else _find_ref(info.annotation, many=False)
        if found is not None:
            ref, many = found
            refs.append(ParameterRef(name=name, alias=info.alias or name, many=many, urls=ref.urls))
    return refs


def _find_ref(annotation: Any, *, many: bool) -> tuple[InputRef, bool] | None:
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        for item in metadata:
            if isinstance(item, InputRef):
                return item, many
        return _find_ref(base, many=many)
    if origin in (list, tuple):
        for arg in get_args(annotation):
            found = _find_ref(arg, many=True)
            if found is not None:
                return found
    if origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _find_ref(arg, many=many)
            if found is not None:
                return found
    return None


def named_inputs(params: BaseModel, refs: Iterable[ParameterRef]) -> list[tuple[str, str]]:
    """``(field path, name)`` for every input file the validated ``params`` name (URLs left out)."""
    named = []
    for ref in refs:
        value = getattr(params, ref.name)
        if value is None:
            continue
        values = list(value) if ref.many else [value]
        for index, item in enumerate(values):
            if ref.urls and str(item).startswith("https://"):
                continue
            path = f"parameters.{ref.alias}" + (f"[{index}]" if ref.many else "")
            named.append((path, str(item)))
    return named


def check_parameter_names(params: BaseModel, inputs: Iterable[JobInput]) -> None:
    """Every input file a parameter names must be one the inputs stage (or lie in a staged job's folder).

    Raises:
        InvalidJobError: naming the parameter (``parameters.imagery``, ``parameters.sources[1]``).
    """
    items = list(inputs)
    files = {staged_name(item) for item in items if item.blob is not None}
    folders = {staged_name(item).rstrip("/") + "/" for item in items if item.job_id is not None}
    for path, name in named_inputs(params, parameter_refs(type(params))):
        if name in files or any(name.startswith(folder) for folder in folders):
            continue
        staged = ", ".join(sorted(files | folders)) or "nothing"
        raise InvalidJobError(
            f"{path}: {name!r} is not one of this job's inputs (they are staged as: {staged}); "
            "parameters name staged inputs, never blobs",
            field=path,
        )
