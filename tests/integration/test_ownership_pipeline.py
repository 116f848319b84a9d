"""Submitters and project-owned inputs through the real pipeline on Azurite: HTTP, upstream queue, follow-ons."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import azure.functions as func
import pytest

import api.http_routes as routes
from hastegeo.auth import PRINCIPAL_HEADER, Principal, Role, encode_principal
from hastegeo.compute.contract import BlobLocation, ComputeJobSpec
from hastegeo.models.job import Job, JobInput, Submitter
from hastegeo.models.states import JobState
from hastegeo.pipeline.accept import parse_request
from hastegeo.runtime import get_runtime
from hastegeo.store.queues import JobMessage
from hastegeo.workloads.geospatial import PIPELINE_KEYS
from hastegeo.workloads.processor import SpecInputs
from hastegeo.workloads.training.processor import TrainingProcessor
from tests.conftest import RuntimeFactory
from tests.support.processors import ScriptParams, ScriptProcessor

from .conftest import drive, put_input

pytestmark = pytest.mark.azurite

ANA = Principal("ana@example.com", "oid-ana", frozenset({Role.SUBMITTER}), frozenset({"p1"}))
SUBMIT: Callable[[func.HttpRequest], func.HttpResponse] = routes.submit_job._function.get_user_function()  # type: ignore[attr-defined]
GET: Callable[[func.HttpRequest], func.HttpResponse] = routes.get_job._function.get_user_function()  # type: ignore[attr-defined]


def post(body: Any, who: Principal | None = ANA) -> tuple[int, Any]:
    headers = {PRINCIPAL_HEADER: encode_principal(who)} if who is not None else {}
    headers["Content-Type"] = "application/json"
    response = SUBMIT(func.HttpRequest(method="POST", url="/api/jobs", body=json.dumps(body).encode(), headers=headers))
    return response.status_code, json.loads(response.get_body())


def test_the_callers_name_and_object_id_are_recorded_and_shown(api_settings: Callable[..., None]) -> None:
    api_settings()
    status, job = post({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]})
    assert status == 202, job
    assert job["submittedBy"] == {"name": "ana@example.com", "objectId": "oid-ana"}
    assert job["history"][0]["message"].startswith(
        "accepted from api, submitted by ana@example.com (oid oid-ana); runs on local"
    )
    stored = get_runtime().store.get(job["id"])
    assert stored.submitted_by == Submitter(name="ana@example.com", object_id="oid-ana")
    headers = {PRINCIPAL_HEADER: encode_principal(ANA)}
    request = func.HttpRequest(method="GET", url="/x", body=b"", headers=headers, route_params={"id": job["id"]})
    assert json.loads(GET(request).get_body())["submittedBy"] == job["submittedBy"]


def test_a_client_cannot_name_the_submitter(api_settings: Callable[..., None]) -> None:
    api_settings()
    forged = {"name": "root@example.com", "objectId": "oid-root"}
    for key in ("submittedBy", "submitted_by"):
        body = {"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}], key: forged}
        status, problem = post(body)
        assert status == 400
        assert problem["title"] == "Server-owned fields cannot be set by clients"
        assert [e["field"] for e in problem["errors"]] == ["submittedBy"]


def test_without_authentication_the_submitter_says_so(api_settings: Callable[..., None]) -> None:
    api_settings(HASTE_AUTH_MODE="none")
    status, job = post({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]}, who=None)
    assert status == 202, job
    assert job["submittedBy"] == {"name": "anonymous (HASTE_AUTH_MODE=none)", "objectId": None}


def test_the_upstream_queue_is_the_submitter_and_its_requests_stay_in_the_project(
    make_runtime: RuntimeFactory,
) -> None:
    runtime = make_runtime()
    ok = json.dumps({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]})
    job = runtime.store.get(runtime.upstream.handle(ok, "msg-ok") or "")
    assert job.submitted_by == Submitter(name="queue jobs-requests")
    assert job.history[0].message.startswith("accepted from queue, submitted by queue jobs-requests;")

    foreign = json.dumps({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p2/secret.txt"}]})
    assert runtime.upstream.handle(foreign, "msg-foreign") is None
    container = runtime.blobs.get_container_client(runtime.settings.storage.jobs_container)
    (name,) = [b.name for b in container.list_blobs(name_starts_with="rejected/")]
    reason = json.loads(container.download_blob(name).readall())["reason"]
    assert reason.startswith("inputs[0].blob: must name a blob under this project's folder 'p1/'")
    assert [j.id for j in runtime.store.list("p1").jobs] == [job.id]


class _ChainParams(ScriptParams):
    run_inference: bool = False
    package_artifacts: bool = True


class _ScriptTraining(ScriptProcessor):
    """A script job with training's follow-ons (inference over its inputs, artifacts over its outputs)."""

    params_model = _ChainParams

    def build_spec(self, job: Job, where: SpecInputs, output: BlobLocation) -> ComputeJobSpec:
        workload_params = {k: v for k, v in job.parameters.items() if k not in PIPELINE_KEYS}
        return super().build_spec(job.model_copy(update={"parameters": workload_params}), where, output)

    follow_ons = TrainingProcessor.follow_ons


def test_follow_ons_keep_the_submitter_and_never_inherit_a_foreign_input(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    runtime.deps.processors["training"] = _ScriptTraining()
    put_input(runtime, "p1/a.txt", b"alpha")
    put_input(runtime, "p2/secret.txt", b"p2 secret")
    request = parse_request(
        {"workload": "training", "projectId": "p1", "backend": "local", "inputs": [{"blob": "p1/a.txt"}],
         "parameters": {"runInference": True}}
    )  # fmt: skip
    ana = Submitter(name="ana@example.com", object_id="oid-ana")
    parent = runtime.acceptor.accept(request, submitter=ana).job
    runtime.submit.handle(JobMessage(job_id=parent.id, kind="submit"))
    # While it runs, its document gains another project's blob, as an older version could have written it.
    runtime.journal.update(
        parent.id, lambda j: j.model_copy(update={"inputs": [*j.inputs, JobInput(blob="p2/secret.txt")]})
    )
    finished = drive(runtime, parent.id)
    assert finished.state is JobState.SUCCEEDED, finished.reason

    refused = [e.message for e in finished.history if e.message.startswith("follow-on inference job not started")]
    assert len(refused) == 1
    assert "inputs[2].blob: must name a blob under this project's folder 'p1/'" in refused[0]
    children = [j for j in runtime.store.list("p1").jobs if j.parent_job_id == parent.id]
    assert [c.workload for c in children] == ["artifacts"]
    child = children[0]
    assert child.submitted_by == ana
    assert child.history[0].message.startswith(
        f"accepted as a follow-on of {parent.id}, submitted by ana@example.com (oid oid-ana);"
    )


def test_a_follow_on_of_the_parent_is_accepted_while_the_parent_post_processes(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime()
    parent = runtime.acceptor.accept(
        parse_request({"workload": "artifacts", "projectId": "p1", "inputs": [{"blob": "p1/a.txt"}]})
    ).job
    assert parent.submitted_by is None  # an in-process caller that names nobody: nothing is invented
    runtime.journal.update(parent.id, lambda j: j.model_copy(update={"state": JobState.POSTPROCESSING}))
    child_request = parse_request({"workload": "artifacts", "projectId": "p1", "inputs": [{"jobId": parent.id}]})
    child = runtime.acceptor.accept(child_request, parent=runtime.store.get(parent.id)).job
    assert child.parent_job_id == parent.id
    # The same input from a client waits for the job to succeed (an implicit ``after``, ADR 0040).
    waiting = runtime.acceptor.accept(child_request).job
    assert waiting.waiting_for == [parent.id]
    assert waiting.state is JobState.QUEUED
