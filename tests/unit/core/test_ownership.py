"""How inputs are owned (docs/adr/0008): the pure rules, on every source field and every input-naming parameter."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from hastegeo.compute.contract import BlobLocation, InputFile
from hastegeo.models.job import JobInput, Submitter
from hastegeo.models.ownership import (
    SOURCE_FIELDS,
    ParameterRef,
    check_parameter_names,
    parameter_refs,
    relative_blob,
    staged_inputs,
    staged_name,
)
from hastegeo.models.params import InputName
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads.processor import processors

PROCESSORS = processors()

OWNERS = {"own1": "p1", "theirs": "p2"}.get


def stage(project: str, *inputs: JobInput) -> list[InputFile]:
    return staged_inputs(project, inputs, inputs_container="in", outputs_container="out", project_of=OWNERS)


def refused(project: str, *inputs: JobInput) -> InvalidJobError:
    with pytest.raises(InvalidJobError) as caught:
        stage(project, *inputs)
    return caught.value


def test_every_source_field_of_an_input_is_governed() -> None:
    # A new way to name input bytes must come with an ownership rule: this fails until it does.
    assert set(JobInput.model_fields) - {"dest"} == SOURCE_FIELDS


def test_a_blob_of_the_project_keeps_its_public_name_and_is_rebuilt_from_the_prefix() -> None:
    assert relative_blob("p1", "p1/scene/x.tif", "f") == "scene/x.tif"
    staged = stage("p1", JobInput(blob="p1/scene/x.tif"), JobInput(blob="p1/a.txt", dest="docs/a.txt"))
    assert staged == [
        InputFile(source=BlobLocation(container="in", path="p1/scene/x.tif"), dest="x.tif"),
        InputFile(source=BlobLocation(container="in", path="p1/a.txt"), dest="docs/a.txt"),
    ]


@pytest.mark.parametrize(
    "blob",
    [
        "p2/secret/buildings.geojson",  # another project
        "p10/x.tif",  # a project whose id starts like this one's
        "p1",  # the project folder itself, no blob
        "p1/",
        "x.tif",  # outside every project
        "P1/x.tif",  # blob names are case-sensitive; project ids are lowercase
        "p1x/x.tif",
    ],
)
def test_a_blob_outside_the_project_is_refused_naming_the_field(blob: str) -> None:
    error = refused("p1", JobInput(blob="p1/ok.tif"), JobInput(blob=blob))
    assert error.field == "inputs[1].blob"
    assert "'p1/'" in str(error)


@pytest.mark.parametrize("blob", ["p1/../p2/secret.tif", "/p1/x.tif", "p1//x.tif", "p1/./x"])
def test_a_stored_name_that_escapes_is_refused_even_without_the_request_model(blob: str) -> None:
    # model_construct skips validation, as a document from an older version might have.
    error = refused("p1", JobInput.model_construct(blob=blob, job_id=None, dest=None))
    assert error.field == "inputs[0].blob"


def test_a_job_of_another_project_is_answered_like_a_missing_job() -> None:
    assert stage("p1", JobInput(job_id="own1")) == [
        InputFile(source=BlobLocation(container="out", path="jobs/own1/outputs"), dest="own1", is_prefix=True)
    ]
    other, missing = refused("p1", JobInput(job_id="theirs")), refused("p1", JobInput(job_id="nosuchjob"))
    assert other.field == missing.field == "inputs[0].jobId"
    assert str(other).replace("theirs", "ID") == str(missing).replace("nosuchjob", "ID")


def test_an_input_without_a_source_is_refused() -> None:
    assert refused("p1", JobInput.model_construct(blob=None, job_id=None, dest="x")).field == "inputs[0]"


# --------------------------------------------------------------------------- parameters naming inputs

# Every (workload, parameter) that names an input file, found from the models' annotations.
REFS = [(workload, ref) for workload, processor in PROCESSORS.items() for ref in parameter_refs(processor.params_model)]


def test_the_input_naming_parameters_are_found_from_the_models() -> None:
    found = {(workload, ref.alias) for workload, ref in REFS}
    # The derivation must find at least those the workloads document (docs/workloads.md).
    assert {
        ("imagery", "sources"),
        ("training", "imagery"),
        ("training", "labels"),
        ("inference", "model"),
        ("inference", "imagery"),
        ("inference", "buildings"),
        ("embedding", "imagery"),
        ("embedding", "buildings"),
    } <= found
    assert next(ref for w, ref in REFS if w == "imagery") == ParameterRef("sources", "sources", many=True, urls=True)


def _params(workload: str, ref: ParameterRef, name: str) -> Any:
    base: dict[str, Any] = {"classes": ["a", "b"]} if workload == "training" else {}
    return PROCESSORS[workload].params_model.model_validate({**base, ref.alias: [name] if ref.many else name})


@pytest.mark.parametrize(("workload", "ref"), REFS, ids=[f"{w}.{r.alias}" for w, r in REFS])
def test_each_input_naming_parameter_must_name_a_staged_input(workload: str, ref: ParameterRef) -> None:
    inputs = [JobInput(blob="p1/scene/x.tif"), JobInput(job_id="own1", dest="model")]
    # Names the inputs stage: a blob under its staged name, a file inside a staged job's folder.
    check_parameter_names(_params(workload, ref, "x.tif"), inputs)
    check_parameter_names(_params(workload, ref, "model/model.json"), inputs)
    path = f"parameters.{ref.alias}" + ("[0]" if ref.many else "")
    for name in ("p2/secret/buildings.geojson", "p1/scene/x.tif", "scene/x.tif", "model", "modelx/a.json"):
        with pytest.raises(InvalidJobError) as caught:
            check_parameter_names(_params(workload, ref, name), inputs)
        assert caught.value.field == path, name
        assert "staged as: model/, x.tif" in str(caught.value)


def test_https_sources_are_not_input_names() -> None:
    ref = next(ref for w, ref in REFS if w == "imagery")
    check_parameter_names(_params("imagery", ref, "https://tiles.example/a.tif"), [])


def test_every_name_of_a_list_parameter_is_checked_past_a_url_or_a_staged_one() -> None:
    """A URL or a staged input early in the list lets no later name through."""
    inputs = [JobInput(blob="p1/scene/x.tif")]
    for names in (["https://tiles.example/a.tif", "y.tif"], ["x.tif", "y.tif"]):
        params = PROCESSORS["imagery"].params_model.model_validate({"sources": names})
        with pytest.raises(InvalidJobError) as caught:
            check_parameter_names(params, inputs)
        assert caught.value.field == "parameters.sources[1]", names


def test_the_refusal_lists_each_staged_name_once_even_a_file_and_a_folder_of_one_name() -> None:
    inputs = [JobInput(blob="p1/a.tif", dest="model/"), JobInput(job_id="own1", dest="model")]
    params = PROCESSORS["imagery"].params_model.model_validate({"sources": ["other.tif"]})
    with pytest.raises(InvalidJobError) as caught:
        check_parameter_names(params, inputs)
    assert "(they are staged as: model/)" in str(caught.value)


def test_an_input_is_staged_under_its_own_name_or_the_one_it_asks_for() -> None:
    assert staged_name(JobInput(blob="p1/scene/x.tif")) == "x.tif"
    assert staged_name(JobInput(blob="x.tif")) == "x.tif"  # checked by the rules above, named all the same
    assert staged_name(JobInput(blob="p1/scene/x.tif", dest="a/y.tif")) == "a/y.tif"
    assert staged_name(JobInput(job_id="own1")) == "own1"


def test_a_parameter_marked_at_the_top_level_is_found_under_its_alias() -> None:
    """A required ``InputName`` field (pydantic keeps its mark in the field's metadata, not the annotation)."""

    class Scene(BaseModel):
        scene_file: InputName = Field(alias="sceneFile")
        caption: str = ""

    assert parameter_refs(Scene) == [ParameterRef("scene_file", "sceneFile", many=False, urls=False)]


def test_a_job_of_the_project_is_staged_whichever_strings_hold_the_project_id() -> None:
    """The project a stored document names equals the request's, but is never the same object."""
    staged = staged_inputs(
        "".join(["p", "1"]),
        [JobInput(job_id="own1")],
        inputs_container="in",
        outputs_container="out",
        project_of=lambda _: "".join(["p", "1"]),
    )
    assert staged == [
        InputFile(source=BlobLocation(container="out", path="jobs/own1/outputs"), dest="own1", is_prefix=True)
    ]


def test_a_submitter_is_described_by_name_and_object_id() -> None:
    assert Submitter(name="ana@example.com", object_id="0000-1").describe() == "ana@example.com (oid 0000-1)"
    assert Submitter(name="queue jobs-requests").describe() == "queue jobs-requests"
