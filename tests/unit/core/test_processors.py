"""Processors: parameters checked at the API with field paths; specs and follow-ons built from the job."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hastegeo.checkpoints.layout import INTERVAL_VARIABLE
from hastegeo.compute.contract import BlobLocation
from hastegeo.models.job import Job, JobInput, JobRequest
from hastegeo.models.states import JobState
from hastegeo.utils.errors import InvalidJobError
from hastegeo.workloads.processor import SpecInputs, processors, spec_name

PROCESSORS = processors()

NOW = datetime(2026, 11, 30, tzinfo=UTC)
WHERE = SpecInputs(inputs_container="in", outputs_container="out", project_of={"img1": "p1"}.get)


def request(workload: str, parameters: dict[str, Any], inputs: list[dict[str, str]] | None = None) -> JobRequest:
    return JobRequest.model_validate(
        {"workload": workload, "projectId": "p1", "parameters": parameters, "inputs": inputs or [{"blob": "a.tif"}]}
    )


def job(workload: str, parameters: dict[str, Any], inputs: list[JobInput] | None = None) -> Job:
    return Job(
        id="j1",
        project_id="p1",
        workload=workload,  # type: ignore[arg-type]
        state=JobState.POSTPROCESSING,
        requested_backend="auto",
        backend="azure_batch",
        parameters=parameters,
        inputs=inputs or [JobInput(job_id="img1"), JobInput(blob="p1/labels.geojson")],
        created_at=NOW,
        updated_at=NOW,
        deadline_at=NOW + timedelta(hours=1),
    )


@pytest.mark.parametrize(
    ("workload", "parameters", "field"),
    [
        ("imagery", {"bbox": [10, 50, 9, 51]}, "parameters.bbox"),
        ("imagery", {"sources": ["../etc/passwd"]}, "parameters.sources"),
        ("imagery", {"previewMaxSize": 3}, "parameters.previewMaxSize"),
        ("training", {}, "parameters.classes"),
        ("training", {"classes": ["a", "a"]}, "parameters.classes"),
        ("training", {"classes": ["a", "b"], "iteratoins": 5}, "parameters.iteratoins"),
        ("inference", {"model": "/abs/model.json"}, "parameters.model"),
        ("embedding", {"kernelSize": 4}, "parameters.kernelSize"),
        ("artifacts", {"compressLevel": 11}, "parameters.compressLevel"),
    ],
)
def test_bad_parameters_name_their_path(workload: str, parameters: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidJobError) as caught:
        PROCESSORS[workload].validate(request(workload, parameters))
    assert caught.value.field is not None
    assert caught.value.field.startswith(field)


def test_geo_workloads_need_an_input() -> None:
    with pytest.raises(InvalidJobError, match="inputs"):
        PROCESSORS["training"].validate(
            JobRequest.model_validate({"workload": "training", "projectId": "p", "parameters": {"classes": ["a", "b"]}})
        )


def test_spec_carries_only_what_the_client_set_and_no_pipeline_keys() -> None:
    training = job("training", {"classes": ["water", "land"], "seed": 3, "runInference": True})
    spec = PROCESSORS["training"].build_spec(training, WHERE, BlobLocation(container="out", path="jobs/j1"))
    assert json.loads(spec.env["HASTE_PARAMS_JSON"]) == {"classes": ["water", "land"], "seed": 3}
    assert spec.entrypoint == ("python", "-m", "hastegeo.workloads.training")
    assert spec.name == spec_name("j1")
    staged = {(i.source.container, i.source.path, i.dest, i.is_prefix) for i in spec.inputs}
    assert staged == {("out", "jobs/img1/outputs", "img1", True), ("in", "p1/labels.geojson", "labels.geojson", False)}


def test_spec_tells_the_job_how_often_to_copy_its_checkpoint() -> None:
    """The agent reads the interval from the job's environment (ADR 0044), so the spec must carry the operator's
    value; a deployment that sets none keeps the 300 s the agent always had."""
    training = job("training", {"classes": ["water", "land"]})
    output = BlobLocation(container="out", path="jobs/j1")
    default = PROCESSORS["training"].build_spec(training, WHERE, output).env
    assert default[INTERVAL_VARIABLE] == "300.0"
    configured = PROCESSORS["training"].build_spec(training, replace(WHERE, checkpoint_interval_s=45), output).env
    assert configured[INTERVAL_VARIABLE] == "45.0"
    short = PROCESSORS["training"].build_spec(training, replace(WHERE, checkpoint_interval_s=0.25), output).env
    assert short[INTERVAL_VARIABLE] == "0.25"  # the agent parses it back to the same float


def test_training_follow_ons() -> None:
    with_inference = PROCESSORS["training"].follow_ons(job("training", {"classes": ["a", "b"], "runInference": True}))
    assert [r.workload for r in with_inference] == ["inference", "artifacts"]
    inference = with_inference[0]
    assert inference.inputs[0] == JobInput(job_id="j1", dest="model")
    assert JobInput(job_id="img1") in inference.inputs
    assert with_inference[1].inputs == [JobInput(job_id="j1")]
    quiet = PROCESSORS["training"].follow_ons(job("training", {"classes": ["a", "b"], "packageArtifacts": False}))
    assert quiet == []


def test_inference_packages_its_outputs_and_others_start_nothing() -> None:
    assert [r.workload for r in PROCESSORS["inference"].follow_ons(job("inference", {}))] == ["artifacts"]
    assert PROCESSORS["imagery"].follow_ons(job("imagery", {})) == []
    assert PROCESSORS["artifacts"].follow_ons(job("artifacts", {})) == []


# -- post-processing reads ------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "blob", "expected"),
    [
        (None, None, "outputs/x_manifest.json was not found on the backend or in blob storage"),
        (
            "NodeNotFound: The specified node does not exist",
            None,
            "outputs/x_manifest.json could not be read: the compute node could not serve it "
            "(NodeNotFound: The specified node does not exist); it is not in blob storage",
        ),
        (
            None,
            "AuthorizationFailure: This request is not authorized",
            "outputs/x_manifest.json could not be read: it is not on the backend; "
            "the blob copy could not be read (AuthorizationFailure: This request is not authorized)",
        ),
        (
            "NodeNotFound: The specified node does not exist",
            "ServiceRequestError: connection refused",
            "outputs/x_manifest.json could not be read: the compute node could not serve it "
            "(NodeNotFound: The specified node does not exist); "
            "the blob copy could not be read (ServiceRequestError: connection refused)",
        ),
    ],
)
def test_unreadable_reason_names_every_cause_provider_first(
    provider: str | None, blob: str | None, expected: str
) -> None:
    from hastegeo.compute.service import unreadable_reason

    assert unreadable_reason("outputs/x_manifest.json", provider, blob) == expected


def test_a_missing_manifest_fails_with_the_reason_the_reads_gave() -> None:
    from hastegeo.workloads.processor import OutputAccess, PostprocessError

    processor = PROCESSORS["artifacts"]
    why = {processor.manifest_path: "outputs/artifacts_manifest.json could not be read: both causes"}
    access = OutputAccess(read=lambda path: None, blob_size=lambda path: None, read_blob=lambda path: None)
    output = BlobLocation(container="out", path="jobs/j1")
    with pytest.raises(PostprocessError) as plain:
        processor.postprocess(job("artifacts", {}), access, output)  # an access without explanations: as before
    assert str(plain.value) == "outputs/artifacts_manifest.json was not found on the backend or in blob storage"
    explained = OutputAccess(
        read=lambda path: None, blob_size=lambda path: None, read_blob=lambda path: None, unreadable=why.get
    )
    with pytest.raises(PostprocessError) as raised:
        processor.postprocess(job("artifacts", {}), explained, output)
    assert str(raised.value) == "outputs/artifacts_manifest.json could not be read: both causes"
