"""Reading Azure ML's run events for the jobs they say ended (pure: no SDK, no I/O)."""

from __future__ import annotations

import base64
import json

import pytest

from hastegeo.compute.azure_ml.events import (
    RUN_COMPLETED,
    RUN_STATUS_CHANGED,
    TAG_JOB_ID,
    ended_jobs,
    run_status_event,
)

WORKSPACE = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"


def event(status: str, job_id: str = "j1") -> dict[str, object]:
    return run_status_event(
        f"haste-{job_id}", status, {TAG_JOB_ID: job_id}, experiment="haste-p1", workspace_id=WORKSPACE
    )


@pytest.mark.parametrize("status", ["Completed", "Failed", "Canceled"])
def test_a_status_that_ends_a_run_names_its_job(status: str) -> None:
    assert ended_jobs(json.dumps(event(status)).encode()) == ["j1"]


@pytest.mark.parametrize("status", ["Queued", "Preparing", "Starting", "Running", "Finalizing", "CancelRequested"])
def test_a_status_that_does_not_end_a_run_names_nothing(status: str) -> None:
    assert ended_jobs(json.dumps(event(status)).encode()) == []


def test_the_documented_shape_is_what_the_stand_in_publishes() -> None:
    made = event("Completed")
    assert made["eventType"] == RUN_STATUS_CHANGED
    assert made["subject"] == "experiments/haste-p1/runs/haste-j1"
    assert set(made["data"]) == {  # type: ignore[arg-type]
        "runStatus",
        "experimentId",
        "experimentName",
        "runId",
        "runType",
        "runTags",
        "runProperties",
    }


def test_base64_cloudevents_arrays_and_run_completed_are_read_and_each_job_named_once() -> None:
    completed = {"type": RUN_COMPLETED, "specversion": "1.0", "data": {"runTags": {TAG_JOB_ID: "j2"}}}
    body = json.dumps([event("Failed", "j1"), completed, event("Completed", "j1")])
    assert ended_jobs(body) == ["j1", "j2"]
    assert ended_jobs(base64.b64encode(body.encode())) == ["j1", "j2"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"null",
        b"42",
        json.dumps({"eventType": RUN_COMPLETED}).encode(),
        json.dumps({"eventType": RUN_COMPLETED, "data": {"runTags": {TAG_JOB_ID: "../etc"}}}).encode(),
        json.dumps({"eventType": RUN_COMPLETED, "data": {"runTags": {TAG_JOB_ID: 7}}}).encode(),
        json.dumps({"eventType": RUN_COMPLETED, "data": {"runTags": ["j1"]}}).encode(),
        json.dumps({"eventType": "Microsoft.Storage.BlobCreated", "data": {"runTags": {TAG_JOB_ID: "j1"}}}).encode(),
        json.dumps([1, "two", None]).encode(),
    ],
)
def test_anything_else_names_nothing_and_never_raises(body: bytes) -> None:
    assert ended_jobs(body) == []
